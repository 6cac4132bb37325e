import type { V1Operation } from '../../v1-operation.js';

/** Every `/v1` operation. A test checks each one is registered and documented. */
export const v1Operations: V1Operation[] = [];
