import { Controller, Get, Header } from '@nestjs/common';
import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The page is static and holds no data, so it is served without the admin token; its script
 * asks the operator for the token and reads GET /debug/instance_loads with it.
 */
export const DASHBOARD_HTML = readFileSync(path.join(__dirname, 'dashboard.html'), 'utf8');

/** Inline script and style only, and requests back to this origin only. */
const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

@Controller()
export class DashboardController {
  @Get('dashboard')
  @Header('content-type', 'text/html; charset=utf-8')
  @Header('cache-control', 'no-cache')
  @Header('content-security-policy', CONTENT_SECURITY_POLICY)
  @Header('x-content-type-options', 'nosniff')
  @Header('referrer-policy', 'no-referrer')
  page(): string {
    return DASHBOARD_HTML;
  }
}
