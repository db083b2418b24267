/** A deterministic unit vector for a text: the same input always embeds the same, different inputs differ. */
export function embed(text: string, dimensions: number): number[] {
  // FNV-1a seeds xorshift32; Math.fround keeps every value exact in float32, so base64 and float agree.
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  let x = h >>> 0 || 1;
  const raw = Array.from({ length: dimensions }, () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return ((x >>> 0) / 0xffffffff) * 2 - 1;
  });
  const norm = Math.hypot(...raw) || 1;
  return raw.map((v) => Math.fround(v / norm));
}

/** OpenAI's encoding_format "base64": the float32 values, little-endian, base64. */
export function toBase64(vector: number[]): string {
  const buf = Buffer.alloc(vector.length * 4);
  vector.forEach((v, i) => buf.writeFloatLE(v, i * 4));
  return buf.toString('base64');
}
