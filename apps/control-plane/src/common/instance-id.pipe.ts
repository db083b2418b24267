import { HttpException, Injectable, PipeTransform } from '@nestjs/common';
import { errorBody, formatZodError, instanceIdLookupSchema } from '@switchyard/contracts';

/** An id in a path is checked before the store is asked: 400 naming instance_id, not a lookup of anything. */
@Injectable()
export class InstanceIdPipe implements PipeTransform<string, string> {
  transform(id: string): string {
    const r = instanceIdLookupSchema.safeParse(id);
    if (!r.success) throw new HttpException(errorBody(`instance_id: ${formatZodError(r.error).replace(/^body: /, '')}`, 'invalid_request_error', 'invalid_instance_id', 'instance_id'), 400);
    return id;
  }
}
