import type { CoreContext } from './context.js';

/** Everything a route or worker may use; built by `createServiceContext`. */
export interface ServiceContext extends CoreContext {}
