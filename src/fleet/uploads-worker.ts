// The uploads thread's entry (uploads-thread.ts starts it): OPA's status reports and decision-log uploads,
// inflated, scanned, parsed and validated here (fleet/intake.ts), never on the event loop. It loads
// only what that needs: intake.ts directly, not the fleet's index (the sink, the registry).
import { serveTasks } from '../work/index.ts';
import { readUpload, type UploadAnswer, type UploadPart, type UploadRequest } from './intake.ts';

serveTasks<UploadRequest, UploadAnswer, UploadPart>(readUpload);
