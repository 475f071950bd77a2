import { describe, expect, it } from 'vitest';
import { isSqliteBusy, retriedWhileBusy } from '../src/ledger/while-busy.js';

// Two starts on a fresh data folder at the same moment both switch the new SQLite file to WAL; SQLite
// fails one of them at once with SQLITE_BUSY (each would wait for the other), without its busy
// timeout. openDatabase tries that step again while it is busy, for as long as a start waits for a
// lock (5 s), and gives up with SQLite's own error after that. A clock and a sleep come in here, so
// nothing waits for real.

const busy = () => Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });

function fakeTime() {
  let t = 0;
  const slept: number[] = [];
  return { now: () => t, sleep: (ms: number) => void (slept.push(ms), (t += ms)), slept };
}

describe('a start step SQLite fails at once while another connection holds its lock', () => {
  it('is tried again while it is busy, and its answer returned once it goes through', () => {
    const time = fakeTime();
    let tries = 0;
    const answer = retriedWhileBusy(
      () => {
        if (++tries < 4) throw busy();
        return 'wal';
      },
      5000,
      time,
    );
    expect({ answer, tries, slept: time.slept }).toEqual({ answer: 'wal', tries: 4, slept: [20, 20, 20] });
  });

  it("gives up with SQLite's error once it has been busy for the time allowed", () => {
    const time = fakeTime();
    let tries = 0;
    expect(() =>
      retriedWhileBusy(
        () => {
          tries++;
          throw busy();
        },
        100,
        time,
      ),
    ).toThrow('database is locked');
    expect(tries).toBe(6); // at 0, 20, 40, 60, 80 and 100 ms
  });

  it('throws any other error at once', () => {
    const time = fakeTime();
    expect(() =>
      retriedWhileBusy(
        () => {
          throw Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' });
        },
        5000,
        time,
      ),
    ).toThrow('disk I/O error');
    expect(time.slept).toEqual([]);
  });

  it('knows SQLite busy errors by their code, extended codes included', () => {
    expect([busy(), { code: 'SQLITE_BUSY_SNAPSHOT' }, { code: 'SQLITE_LOCKED' }, new Error('x'), null].map(isSqliteBusy)).toEqual([
      true,
      true,
      false,
      false,
      false,
    ]);
  });
});
