import { Controller, Get, HttpException, Inject } from '@nestjs/common';
import type { LoadStore } from '@switchyard/load-store';
import { LOAD_STORE } from '../common/tokens';

@Controller()
export class HealthController {
  constructor(@Inject(LOAD_STORE) private readonly store: LoadStore) {}

  @Get('healthz')
  healthz() {
    return { status: 'ok' };
  }

  @Get('readyz')
  async readyz() {
    try {
      await this.store.ping();
      return { status: 'ready', store: 'ok' };
    } catch (err) {
      throw new HttpException({ status: 'not_ready', store: 'unreachable', detail: (err as Error).message }, 503);
    }
  }
}
