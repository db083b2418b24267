import { Body, Controller, Delete, Get, HttpCode, HttpException, Param, Post, UseGuards } from '@nestjs/common';
import { errorBody, heartbeatSchema, INFLIGHT_REJECTED_MESSAGE, instanceIdLookupSchema, instanceRegistrationSchema, legacyHeartbeatSchema } from '@switchyard/contracts';
import { z } from 'zod';
import { AdminTokenGuard, NeedsRole } from '../common/admin-token.guard';
import { IncludeExpired } from '../common/include-expired';
import { InstanceIdPipe } from '../common/instance-id.pipe';
import { parseBody } from '../common/zod-body';
import { InstancesService } from './instances.service';

const legacyIdSchema = z.object({ instance_id: instanceIdLookupSchema }).strict();

@Controller()
@UseGuards(AdminTokenGuard)
export class InstancesController {
  constructor(private readonly instances: InstancesService) {}

  @Post('v1/instances')
  @HttpCode(200)
  register(@Body() body: unknown) {
    return this.instances.register(parseBody(instanceRegistrationSchema, body));
  }

  @Post('v1/instances/:id/heartbeat')
  @HttpCode(200)
  async heartbeat(@Param('id', InstanceIdPipe) id: string, @Body() body: unknown) {
    if (body && typeof body === 'object' && 'inflight' in body) {
      throw new HttpException(errorBody(INFLIGHT_REJECTED_MESSAGE, 'invalid_request_error', 'inflight_not_accepted', 'inflight'), 400);
    }
    await this.instances.heartbeat(id, parseBody(heartbeatSchema, body ?? {}));
    return { ok: true };
  }

  @Delete('v1/instances/:id')
  async remove(@Param('id', InstanceIdPipe) id: string) {
    await this.instances.remove(id);
    return { ok: true, instance_id: id };
  }

  @Get('v1/instances')
  @NeedsRole('read')
  async list(@IncludeExpired() includeExpired: boolean) {
    return { instances: await this.instances.list(includeExpired) };
  }

  @Get('v1/instances/:id')
  @NeedsRole('read')
  get(@Param('id', InstanceIdPipe) id: string) {
    return this.instances.get(id);
  }

  // Aliases for agents written for the original proxy.
  @Post('v1/instance/register')
  @HttpCode(200)
  legacyRegister(@Body() body: unknown) {
    return this.register(body);
  }

  @Post('v1/instance/heartbeat')
  @HttpCode(200)
  async legacyHeartbeat(@Body() body: unknown) {
    const { instance_id, inflight, ...hb } = parseBody(legacyHeartbeatSchema, body);
    await this.instances.heartbeat(instance_id, hb);
    if (inflight !== undefined) {
      this.instances.warnLegacyInflight(instance_id);
      return { ok: true, ignored: ['inflight'] };
    }
    return { ok: true, ignored: [] };
  }

  @Post('v1/instance/unregister')
  @HttpCode(200)
  async legacyUnregister(@Body() body: unknown) {
    const { instance_id } = parseBody(legacyIdSchema, body);
    await this.instances.remove(instance_id);
    return { ok: true, instance_id };
  }

  @Get('v1/instance/list')
  @NeedsRole('read')
  legacyList(@IncludeExpired() includeExpired: boolean) {
    return this.list(includeExpired);
  }
}
