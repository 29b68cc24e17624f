// The uploads thread's entry (uploads.ts starts it): OPA's status reports and decision-log uploads,
// inflated, scanned, parsed and validated here (fleet/intake.ts), never on the event loop. It loads
// only what that needs: fleet/intake.ts directly, not the fleet's index (the sink, the registry).
import { readUpload, type UploadAnswer, type UploadPart, type UploadRequest } from '../fleet/intake.ts';
import { serveTasks } from './thread.ts';

serveTasks<UploadRequest, UploadAnswer, UploadPart>(readUpload);
