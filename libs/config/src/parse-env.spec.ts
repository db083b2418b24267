import { z } from 'zod';
import { parseEnv } from './parse-env';

describe('parseEnv', () => {
  const schema = z.object({ PORT: z.coerce.number().int().min(1).default(80) });
  it('applies defaults', () => {
    expect(parseEnv(schema, {})).toEqual({ PORT: 80 });
  });
  it('treats an empty variable as unset', () => {
    const withToken = z.object({ PORT: z.coerce.number().int().min(1).default(80), ADMIN_TOKEN: z.string().min(1).optional() });
    expect(parseEnv(withToken, { PORT: '', ADMIN_TOKEN: '' })).toEqual({ PORT: 80 });
  });
  it('names the variable that is wrong', () => {
    expect(() => parseEnv(schema, { PORT: 'x' })).toThrow(/^invalid configuration: PORT: /);
  });
});
