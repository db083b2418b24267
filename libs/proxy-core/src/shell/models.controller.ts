import { Controller, Get, Inject } from '@nestjs/common';
import type { ProxyRuntime } from '../proxy-runtime';
import { PROXY_RUNTIME } from './tokens';

@Controller('v1')
export class ModelsController {
  constructor(@Inject(PROXY_RUNTIME) private readonly rt: ProxyRuntime) {}

  /** The union of models served by alive instances, from the local registry snapshot. */
  @Get('models')
  models() {
    return { object: 'list', data: this.rt.registry.models().map((id) => ({ id, object: 'model', created: 0, owned_by: 'switchyard' })) };
  }
}
