import { Controller, Get, HttpException, Inject, Param } from '@nestjs/common';
import { errorBody } from '@switchyard/contracts';
import type { ProxyRuntime } from '../proxy-runtime';
import { PROXY_RUNTIME } from './tokens';

@Controller('v1')
export class ModelsController {
  constructor(@Inject(PROXY_RUNTIME) private readonly rt: ProxyRuntime) {}

  /** The union of models served by alive instances, from the local registry snapshot, with what their engines report. */
  @Get('models')
  models() {
    return { object: 'list', data: this.rt.registry.models().map((id) => this.model(id)) };
  }

  /** The SDKs' models.retrieve; ids may contain `/` (org/model), so the whole rest of the path is the id. */
  @Get('models/*')
  retrieve(@Param('*') model: string) {
    if (!this.rt.registry.modelSummary(model)) {
      throw new HttpException(errorBody(`model '${model}' is not served by any alive instance`, 'not_found_error', 'model_not_found', 'model'), 404);
    }
    return this.model(model);
  }

  private model(id: string) {
    const summary = this.rt.registry.modelSummary(id);
    return { id, object: 'model', created: 0, owned_by: summary?.owned_by ?? 'switchyard', ...(summary?.max_model_len != null ? { max_model_len: summary.max_model_len } : {}) };
  }
}
