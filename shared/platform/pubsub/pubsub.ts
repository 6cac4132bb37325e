import type { ClientConfig, PubSub } from '@google-cloud/pubsub';
import type { Config } from '../config.js';
import { FailedPreconditionError, invalidField, UnavailableError, type ApiError } from '../errors.js';

/**
 * The Pub/Sub client of a process, and the subscription management the admin API and the
 * intake share (spec "Publish/subscribe ingestion").
 */

/** The full topic path an operator registers: `projects/<project>/topics/<topic>`. */
export const TOPIC_PATH = /^projects\/[A-Za-z0-9][A-Za-z0-9.:_-]{0,99}\/topics\/[A-Za-z][A-Za-z0-9._~+%-]{2,254}$/;

/** @throws InvalidArgumentError unless the topic is a full topic path. */
export function checkTopicPath(topic: string): void {
  if (!TOPIC_PATH.test(topic)) throw invalidField('topic', 'must have the form projects/<project>/topics/<topic>');
}

/** gRPC status codes the subscription calls answer with. */
const GRPC = { invalidArgument: 3, deadlineExceeded: 4, notFound: 5, alreadyExists: 6, permissionDenied: 7 } as const;

/**
 * With PUBSUB_EMULATOR_HOST the client talks to the emulator. `universeDomain` is named so that
 * google-auth-library does not look for credentials or probe the GCE metadata server off the
 * machine, and `emulatorMode` keeps emulator mode, which a set universe domain would turn off
 * (see test/helpers/pubsub-emulator.ts).
 */
export function pubSubClientOptions(config: Pick<Config, 'pubsubProjectId' | 'pubsubEmulatorHost'>): ClientConfig {
  if (config.pubsubEmulatorHost) {
    return { projectId: config.pubsubProjectId, apiEndpoint: config.pubsubEmulatorHost, emulatorMode: true, universeDomain: 'googleapis.com' };
  }
  return { projectId: config.pubsubProjectId };
}

/**
 * One client per process (or per admin call); the caller closes it. The client library (gRPC,
 * google-gax: ~40 MB) is loaded on first use, so an API process that never manages a Pub/Sub
 * source never holds it.
 */
export async function createPubSub(config: Pick<Config, 'pubsubProjectId' | 'pubsubEmulatorHost'>): Promise<PubSub> {
  const { PubSub } = await import('@google-cloud/pubsub');
  return new PubSub(pubSubClientOptions(config));
}

/** The service's own subscription for a project's topic, in the service's GCP project. */
export function subscriptionPath(pubsubProjectId: string, projectId: string): string {
  return `projects/${pubsubProjectId}/subscriptions/tds-${projectId}`;
}

export interface EnsureSubscriptionOptions {
  /**
   * When the subscription exists on another topic (the source moved, or its topic was deleted),
   * delete it and create it on `topic`. Only the operator's SetPubSubSource does this; the
   * intake never deletes, so processes that reconcile at once cannot delete each other's work.
   */
  replace: boolean;
  /** Deadline of each call to Pub/Sub, retries included. @defaultValue 10000 */
  timeoutMs?: number;
}

export type EnsureOutcome = 'created' | 'reused' | 'replaced';

/**
 * Creates the subscription, or reuses it when it already exists on `topic`.
 * @throws FailedPreconditionError (topic missing, no permission, subscription on another topic
 *   without `replace`), InvalidArgumentError (a name Pub/Sub rejects), UnavailableError (Pub/Sub
 *   unreachable or too slow; safe to retry).
 */
export async function ensureSubscription(
  pubsub: PubSub,
  source: { topic: string; subscription: string },
  opts: EnsureSubscriptionOptions,
): Promise<EnsureOutcome> {
  const gaxOpts = { timeout: opts.timeoutMs ?? 10_000 };
  // Long enough for a batch to reach Redis; the client extends it while a message is in hand.
  // The retry policy spaces out redeliveries of nacked messages while Redis or ClickHouse is down.
  const settings = { ackDeadlineSeconds: 60, retryPolicy: { minimumBackoff: { seconds: 1 }, maximumBackoff: { seconds: 60 } }, gaxOpts };
  const create = () => pubsub.createSubscription(source.topic, source.subscription, settings);
  try {
    await create();
    return 'created';
  } catch (err) {
    if (grpcCode(err) !== GRPC.alreadyExists) throw toApiError(err, source.topic);
  }
  try {
    const sub = pubsub.subscription(source.subscription);
    const [meta] = await sub.getMetadata(gaxOpts);
    if (meta.topic === source.topic) return 'reused';
    if (!opts.replace) {
      throw new FailedPreconditionError(
        `subscription ${source.subscription} is attached to ${meta.topic ?? 'no topic'}, not ${source.topic}; set the source again to move it`,
      );
    }
    await sub.delete(gaxOpts);
    await create();
    return 'replaced';
  } catch (err) {
    if (err instanceof FailedPreconditionError) throw err;
    throw toApiError(err, source.topic);
  }
}

function grpcCode(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

/** Operator-facing errors: what to fix, never the client's internals. */
function toApiError(err: unknown, topic: string): ApiError {
  switch (grpcCode(err)) {
    case GRPC.notFound:
      return new FailedPreconditionError(`topic ${topic} does not exist; create it before registering it`, [
        { field: 'topic', description: 'topic does not exist' },
      ]);
    case GRPC.permissionDenied:
      return new FailedPreconditionError(`the service may not subscribe to ${topic}; grant its account pubsub.subscriptions.create on the topic`, [
        { field: 'topic', description: 'permission denied' },
      ]);
    case GRPC.invalidArgument:
      return invalidField('topic', `Pub/Sub rejected the name: ${topic}`);
    case GRPC.alreadyExists:
      return new UnavailableError('the subscription changed while it was being set up; retry', 'pubsub');
    default:
      return new UnavailableError('Pub/Sub is unreachable or did not answer in time; retry', 'pubsub');
  }
}
