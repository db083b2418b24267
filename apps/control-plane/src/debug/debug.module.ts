import { Module } from '@nestjs/common';
import { MetricsModule } from '../metrics/metrics.module';
import { DebugController } from './debug.controller';
import { DebugService } from './debug.service';

@Module({
  imports: [MetricsModule],
  controllers: [DebugController],
  providers: [DebugService],
})
export class DebugModule {}
