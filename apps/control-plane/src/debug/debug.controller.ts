import { Controller, Get, Query, UseGuards } from '@nestjs/common';
import type { DebugStatusResponse, InstanceLoadsResponse } from '@switchyard/contracts';
import { AdminTokenGuard, NeedsRole } from '../common/admin-token.guard';
import { DebugService } from './debug.service';

@Controller('debug')
@UseGuards(AdminTokenGuard)
@NeedsRole('read')
export class DebugController {
  constructor(private readonly debug: DebugService) {}

  @Get('instance_loads')
  instanceLoads(@Query('include_dead') includeDead?: string): Promise<InstanceLoadsResponse> {
    return this.debug.instanceLoads(includeDead === 'true' || includeDead === '1');
  }

  @Get('status')
  status(): Promise<DebugStatusResponse> {
    return this.debug.status();
  }
}
