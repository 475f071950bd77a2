/** A JSON object's members by name. */
export type JsonObject = Record<string, unknown>;

/** Whether `v` is a JSON object (not null, not an array). */
export const isJsonObject = (v: unknown): v is JsonObject => v !== null && typeof v === 'object' && !Array.isArray(v);
