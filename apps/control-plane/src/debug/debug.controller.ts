import { Controller, Get, UseGuards } from '@nestjs/common';
import type { DebugStatusResponse, InstanceLoadsResponse } from '@switchyard/contracts';
import { AdminTokenGuard, NeedsRole } from '../common/admin-token.guard';
import { IncludeExpired } from '../common/include-expired';
import { DebugService } from './debug.service';

@Controller('debug')
@UseGuards(AdminTokenGuard)
@NeedsRole('read')
export class DebugController {
  constructor(private readonly debug: DebugService) {}

  @Get('instance_loads')
  instanceLoads(@IncludeExpired() includeExpired: boolean): Promise<InstanceLoadsResponse> {
    return this.debug.instanceLoads(includeExpired);
  }

  @Get('status')
  status(): Promise<DebugStatusResponse> {
    return this.debug.status();
  }
}
