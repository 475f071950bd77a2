/** What a caller gets back from a client when it expects a failure (the test fails if the call succeeds). */
export async function caught(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected the call to fail');
}
