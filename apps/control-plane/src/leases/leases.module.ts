import { Module } from '@nestjs/common';
import { MetricsModule } from '../metrics/metrics.module';
import { LeaseReaperService } from './lease-reaper.service';

@Module({
  imports: [MetricsModule],
  providers: [LeaseReaperService],
})
export class LeasesModule {}
