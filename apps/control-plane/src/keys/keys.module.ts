import { DynamicModule, Module } from '@nestjs/common';
import type { DeclaredKey } from '@switchyard/config';
import { keyStoreFor, LoadStore } from '@switchyard/load-store';
import { LOAD_STORE } from '../common/tokens';
import { KeysController } from './keys.controller';
import { KeysService } from './keys.service';
import { DECLARED_KEYS, KEY_STORE } from './keys.tokens';

/** Client API keys: the admin routes, the debug view, and the config file's keys written at start. */
@Module({})
export class KeysModule {
  static forRoot(declared: DeclaredKey[]): DynamicModule {
    return {
      module: KeysModule,
      controllers: [KeysController],
      providers: [
        { provide: KEY_STORE, useFactory: (store: LoadStore) => keyStoreFor(store), inject: [LOAD_STORE] },
        { provide: DECLARED_KEYS, useValue: declared },
        KeysService,
      ],
    };
  }
}
