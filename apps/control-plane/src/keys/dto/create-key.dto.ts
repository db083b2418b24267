import { apiKeyCreateSchema, ApiKeyCreate } from '@switchyard/contracts';

/** `POST /v1/keys` body: name, and optionally models, rpm, tpm; unknown fields are refused. */
export const createKeySchema = apiKeyCreateSchema;
export type CreateKeyDto = ApiKeyCreate;
