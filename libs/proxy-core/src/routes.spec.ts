import { boundaryOf, formField, modelOf } from './routes';
import { cameThroughSwitchyard, viaUpstream } from './headers';

const form = (boundary: string, parts: string[]) => Buffer.from(parts.map((p) => `--${boundary}\r\n${p}\r\n`).join('') + `--${boundary}--\r\n`, 'latin1');

describe('multipart model field', () => {
  it('finds the model after a file part, skipping the file bytes, whatever they contain', async () => {
    const b = '----x1';
    const body = form(b, [
      'Content-Disposition: form-data; name="file"; filename="model.wav"\r\nContent-Type: audio/wav\r\n\r\nname="model"\r\n\r\nnot-this',
      'Content-Disposition: form-data; name="model"\r\n\r\nwhisper-1',
    ]);
    expect(formField(body, b, 'model')).toBe('whisper-1');
    expect(modelOf('/v1/audio/transcriptions', `multipart/form-data; boundary=${b}`, body)).toEqual({ model: 'whisper-1', parsed: null });
  });

  it('takes a quoted boundary, refuses a content type without one, and says model is missing when the form has none', () => {
    expect(boundaryOf('multipart/form-data; boundary="a b"')).toBe('a b');
    expect(boundaryOf('application/json')).toBeUndefined();
    expect(modelOf('/v1/audio/translations', 'application/json', Buffer.from('{"model":"m"}'))).toMatchObject({ status: 400 });
    const b = 'zz';
    expect(modelOf('/v1/audio/translations', `multipart/form-data; boundary=${b}`, form(b, ['Content-Disposition: form-data; name="language"\r\n\r\nen']))).toMatchObject({ status: 400, error: { error: { param: 'model' } } });
  });

  it('reads JSON bodies on the other routes', () => {
    expect(modelOf('/v1/rerank', 'application/json', Buffer.from('{"model":"r"}'))).toEqual({ model: 'r', parsed: { model: 'r' } });
    expect(modelOf('/v1/audio/speech', 'application/json', Buffer.from('nope'))).toMatchObject({ status: 400, error: { error: { code: 'invalid_json' } } });
  });
});

describe('via', () => {
  it('appends its entry and recognises it only as a received-by, not inside a comment', () => {
    expect(viaUpstream(undefined)).toBe('1.1 switchyard');
    expect(viaUpstream('1.0 lb')).toBe('1.0 lb, 1.1 switchyard');
    expect(cameThroughSwitchyard('1.0 lb, 1.1 switchyard')).toBe(true);
    expect(cameThroughSwitchyard('1.1 SwitchYard')).toBe(true);
    expect(cameThroughSwitchyard('1.1 lb (not switchyard)')).toBe(false);
    expect(cameThroughSwitchyard(undefined)).toBe(false);
  });
});
