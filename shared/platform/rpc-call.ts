/**
 * A named call of the request/reply channel (`warehouse/warehouse-rpc.ts`), declared by the
 * feature that answers it: its name on the wire, how long a caller waits for the answer, and (as
 * types only) its arguments and result. The workers role registers a function under the name;
 * the API calls it through the channel, or directly in a process that has its own ClickHouse.
 */
export interface RpcCall<Args extends unknown[], Result> {
  readonly name: string;
  readonly answerTimeoutMs: number;
  /** Never set: carries the argument and result types from the declaration to both sides. */
  readonly signature?: (...args: Args) => Promise<Result>;
}
