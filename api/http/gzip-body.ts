import { Transform, type Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { FastifyReply, FastifyRequest, preParsingHookHandler } from 'fastify';
import { ApiError, InvalidArgumentError } from '../../shared/platform/errors.js';

/**
 * Request bodies sent with `Content-Encoding: gzip` (LogEvents and LogTreatmentInteraction): the
 * body is inflated as it arrives, and every body limit applies to the inflated bytes. Inflation
 * stops at the first byte past the limit (a decompression bomb costs at most the limit and one
 * zlib chunk, never its inflated size) and the answer is 413. Any other encoding is 415.
 */

/** The requests whose body stream was already decoded, for the JSON parser's encoding check. */
const decoded = new WeakSet<FastifyRequest>();

export function encodingError(encoding: string): ApiError {
  return new ApiError(
    415,
    'INVALID_ARGUMENT',
    `Content-Encoding "${encoding.slice(0, 64)}" is not supported here; LogEvents and LogTreatmentInteraction accept gzip, other operations an unencoded body`,
  );
}

function tooLarge(limit: number): ApiError {
  return new ApiError(413, 'INVALID_ARGUMENT', `request body is too large: more than ${limit} bytes once decompressed`);
}

const isIdentity = (encoding: string | undefined): boolean => encoding === undefined || encoding === '' || encoding.toLowerCase() === 'identity';

/**
 * For the JSON parser of every route: undefined when the body it is given is plain (no encoding,
 * `identity`, or already inflated here), else the 415. One header lookup per request.
 */
export function undecodedEncodingError(req: FastifyRequest): ApiError | undefined {
  const encoding = req.headers['content-encoding'];
  if (isIdentity(encoding) || decoded.has(req)) return undefined;
  return encodingError(encoding!);
}

/**
 * `source` inflated, at most `limit` bytes of it. `receivedEncodedLength` (the compressed bytes
 * read so far) is what Fastify compares with Content-Length and with its own limit.
 */
export function inflateCapped(source: Readable, limit: number, onLimit: () => void): Readable & { receivedEncodedLength: number } {
  const gunzip = createGunzip();
  let inflated = 0;
  const out = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      inflated += chunk.length;
      if (inflated > limit) {
        stop();
        onLimit();
        return callback(tooLarge(limit));
      }
      callback(null, chunk);
    },
  }) as Transform & { receivedEncodedLength: number };
  out.receivedEncodedLength = 0;
  const count = (chunk: Buffer) => {
    out.receivedEncodedLength += chunk.length;
  };
  const stop = () => {
    source.off('data', count);
    source.unpipe(gunzip);
    gunzip.destroy();
  };
  source.on('data', count);
  source.on('error', (err) => out.destroy(err));
  gunzip.on('error', (err: Error) => {
    stop();
    out.destroy(new InvalidArgumentError(`the body is not valid gzip: ${err.message}`));
  });
  source.pipe(gunzip).pipe(out);
  return out;
}

/** The preParsing hook of the operations that accept gzip bodies; the route's body limit applies inflated. */
export function gzipBodies(): preParsingHookHandler {
  return (req: FastifyRequest, reply: FastifyReply, payload, done) => {
    const encoding = req.headers['content-encoding'];
    if (isIdentity(encoding)) return done(null, payload);
    const name = encoding!.trim().toLowerCase();
    if (name !== 'gzip' && name !== 'x-gzip') return done(encodingError(encoding!), undefined);
    decoded.add(req);
    // The rest of the upload is never read: the connection closes after the 413.
    done(
      null,
      inflateCapped(payload, req.routeOptions.bodyLimit, () => void reply.header('connection', 'close')),
    );
  };
}
