import { Body, Controller, Delete, Get, HttpCode, Param, Post, UseGuards } from '@nestjs/common';
import { ApiKeyCreated, ApiKeysResponse, ApiKeyView } from '@switchyard/contracts';
import { AdminTokenGuard, NeedsRole } from '../common/admin-token.guard';
import { parseBody } from '../common/zod-body';
import { createKeySchema } from './dto/create-key.dto';
import { KeyIdPipe } from './key-id.pipe';
import { KeysService } from './keys.service';

@Controller()
@UseGuards(AdminTokenGuard)
export class KeysController {
  constructor(private readonly keys: KeysService) {}

  /** The only answer that carries the secret. */
  @Post('v1/keys')
  @HttpCode(201)
  create(@Body() body: unknown): Promise<ApiKeyCreated> {
    return this.keys.create(parseBody(createKeySchema, body));
  }

  @Get('v1/keys')
  @NeedsRole('read')
  async list(): Promise<ApiKeysResponse> {
    return { keys: await this.keys.list() };
  }

  @Get('v1/keys/:id')
  @NeedsRole('read')
  get(@Param('id', KeyIdPipe) id: string): Promise<ApiKeyView> {
    return this.keys.get(id);
  }

  @Delete('v1/keys/:id')
  async revoke(@Param('id', KeyIdPipe) id: string) {
    await this.keys.revoke(id);
    return { ok: true, id };
  }

  /** The debug view of keys: limits and this minute's usage, as the CLI's `keys list` shows them. */
  @Get('debug/keys')
  @NeedsRole('read')
  async debug(): Promise<ApiKeysResponse> {
    return { generated_at: new Date().toISOString(), keys: await this.keys.list() };
  }
}
