import { HttpException, Injectable, PipeTransform } from '@nestjs/common';
import { apiKeyIdSchema, errorBody, formatZodError } from '@switchyard/contracts';

/** A key id in a path is checked before the store is asked: 400 naming id. */
@Injectable()
export class KeyIdPipe implements PipeTransform<string, string> {
  transform(id: string): string {
    const r = apiKeyIdSchema.safeParse(id);
    if (!r.success) throw new HttpException(errorBody(`id: ${formatZodError(r.error).replace(/^body: /, '')}`, 'invalid_request_error', 'invalid_key_id', 'id'), 400);
    return id;
  }
}
