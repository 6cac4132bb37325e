import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import protojson from 'protobufjs/ext/protojson.js';
import type { EventAttributes, PropertyValue } from './types.js';
import { repoFile } from '../platform/repo-root.js';

/**
 * Binary protobuf ⇄ JSON for the Pub/Sub payloads of `tds/v1/events.proto` (spec
 * "Publish/subscribe ingestion"). The JSON side is the LogEvents request shape, so a
 * decoded message goes through the same validation as the HTTP body.
 *
 * The conversion is ProtoJSON (lowerCamelCase names, int64 as decimal strings, Timestamps as
 * RFC 3339 UTC with `Z` keeping up to nanosecond digits), then shaped: optional strings that
 * are empty are left out, and the required timestamps and one-member PropertyValues are
 * checked, because a protobuf message can always omit them and the JSON types promise them.
 */

type PropertyMap = Record<string, PropertyValue>;

/** One event in the LogEvents (ExternalEvent) shape. */
export interface LogEventJson extends EventAttributes {
  /** Kept even when empty so request validation reports it like the HTTP path does. */
  eventName: string;
  clientEventTimestamp: string;
  serverReceivedTimestamp?: string;
}

/** Payload of `data_type=EventData`. Required strings are kept even when empty (see above). */
export interface LogEventsJson {
  projectId: string;
  userId: string;
  events: LogEventJson[];
}

/** Payload of `data_type=UserAttribute`. */
export interface UserAttributeJson {
  projectId?: string;
  userId: string;
  userProperties: PropertyMap;
  updateTimestamp: string;
}

export interface ProtoCodec {
  /** @throws ProtoDecodeError when the bytes are not a well-formed LogEventsRequest. */
  decodeLogEventsRequest(buf: Uint8Array): LogEventsJson;
  /** @throws ProtoDecodeError when the bytes are not a well-formed UserAttribute. */
  decodeUserAttribute(buf: Uint8Array): UserAttributeJson;
  encodeLogEventsRequest(json: LogEventsJson): Uint8Array;
  encodeUserAttribute(json: UserAttributeJson): Uint8Array;
}

/** Poison input: the payload can never be decoded, so retrying it is pointless (dead-letter it). */
export class ProtoDecodeError extends Error {
  readonly isRetriable = false;
  constructor(
    readonly messageType: string,
    readonly reason: string,
  ) {
    super(`cannot decode ${messageType}: ${reason}`);
    this.name = 'ProtoDecodeError';
  }
}

const OPTIONAL_EVENT_STRINGS = ['insertId', 'sessionId', 'preLoginTempUserId', 'country', 'region', 'city', 'ipAddress', 'deviceId', 'appVersionId'] as const;

const PROPERTY_KINDS = new Set(['longValue', 'doubleValue', 'stringValue', 'booleanValue', 'timestampValue']);

type Json = Record<string, unknown>;

/** Loads the schema once per codec; build one codec in the composition root and pass it down. */
export function createProtoCodec(): ProtoCodec {
  const root = protobuf.loadSync(fileURLToPath(repoFile('shared/ingestion/proto/tds/v1/events.proto')));
  const logEventsType = root.lookupType('tds.v1.LogEventsRequest');
  const userAttributeType = root.lookupType('tds.v1.UserAttribute');
  return {
    decodeLogEventsRequest: (buf) => shapeLogEvents(decodeToJson(logEventsType, buf)),
    decodeUserAttribute: (buf) => shapeUserAttribute(decodeToJson(userAttributeType, buf)),
    encodeLogEventsRequest: (json) => encodeFromJson(logEventsType, json),
    encodeUserAttribute: (json) => encodeFromJson(userAttributeType, json),
  };
}

function decodeToJson(type: protobuf.Type, buf: Uint8Array): Json {
  try {
    return protojson.toJson(type, type.decode(buf)) as Json;
  } catch (err) {
    throw new ProtoDecodeError(type.name, (err as Error).message);
  }
}

/** Encoding is for producers and tests with typed input: a bad value is a bug, so it throws as is. */
function encodeFromJson(type: protobuf.Type, json: LogEventsJson | UserAttributeJson): Uint8Array {
  return type.encode(protojson.fromJson(type, json)).finish();
}

function shapeLogEvents(j: Json): LogEventsJson {
  const events = (j.events as Json[] | undefined) ?? [];
  return {
    projectId: (j.projectId as string | undefined) ?? '',
    userId: (j.userId as string | undefined) ?? '',
    events: events.map((e, i) => shapeEvent(e, `events[${i}]`)),
  };
}

function shapeEvent(e: Json, path: string): LogEventJson {
  const out: LogEventJson = {
    eventName: (e.eventName as string | undefined) ?? '',
    clientEventTimestamp: requireTimestamp(e.clientEventTimestamp, `${path}.client_event_timestamp`, 'LogEventsRequest'),
  };
  if (e.serverReceivedTimestamp !== undefined) out.serverReceivedTimestamp = e.serverReceivedTimestamp as string;
  for (const key of OPTIONAL_EVENT_STRINGS) {
    const value = e[key] as string | undefined;
    // An explicitly empty insert_id would collide with every other empty one in de-duplication.
    if (value) out[key] = value;
  }
  if (e.eventProperties) out.eventProperties = shapeProperties(e.eventProperties as Json, `${path}.event_properties`, 'LogEventsRequest');
  if (e.userProperties) out.userProperties = shapeProperties(e.userProperties as Json, `${path}.user_properties`, 'LogEventsRequest');
  return out;
}

function shapeUserAttribute(j: Json): UserAttributeJson {
  const out: UserAttributeJson = {
    userId: (j.userId as string | undefined) ?? '',
    userProperties: shapeProperties((j.userProperties as Json | undefined) ?? {}, 'user_properties', 'UserAttribute'),
    updateTimestamp: requireTimestamp(j.updateTimestamp, 'update_timestamp', 'UserAttribute'),
  };
  if (j.projectId) out.projectId = j.projectId as string;
  return out;
}

function requireTimestamp(value: unknown, path: string, messageType: string): string {
  if (typeof value !== 'string') throw new ProtoDecodeError(messageType, `${path} is missing`);
  return value;
}

function shapeProperties(map: Json, path: string, messageType: string): PropertyMap {
  const out: PropertyMap = {};
  for (const [name, value] of Object.entries(map)) {
    out[name] = shapeProperty(value as Json, `${path}["${name}"]`, messageType);
  }
  return out;
}

/** ProtoJSON leaves an unset oneof as `{}` and writes non-finite doubles as strings; neither fits the JSON shape. */
function shapeProperty(value: Json, path: string, messageType: string): PropertyValue {
  const keys = Object.keys(value).filter((k) => PROPERTY_KINDS.has(k));
  if (keys.length !== 1) throw new ProtoDecodeError(messageType, `${path} has no value set`);
  if (keys[0] === 'doubleValue' && typeof value.doubleValue !== 'number') {
    throw new ProtoDecodeError(messageType, `${path}.double_value is not a finite number`);
  }
  return value as PropertyValue;
}
