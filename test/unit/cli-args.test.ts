import { describe, expect, it } from 'vitest';
import { Type } from 'typebox';
import { adminOperations } from '../../api/admin.routes.js';
import { argsToBody, bodyFromArgs, fieldToFlag, flagToField, formatCommandHelp, formatHelp, schemaErrors } from '../../api/cli/cli-args.js';
import { InvalidArgumentError } from '../../shared/platform/errors.js';
import { Int64In, Strict } from '../../shared/platform/http/common.schemas.js';

const schemaOf = (command: string) => {
  const op = adminOperations.find((o) => o.command === command);
  if (!op) throw new Error(`no admin command ${command}`);
  return op.body;
};

/** A schema with one field of every kind the parser converts. */
const Kinds = Strict({
  name: Type.String(),
  count: Type.Integer(),
  ratio: Type.Optional(Type.Number()),
  force: Type.Optional(Type.Boolean()),
  ids: Type.Optional(Type.Array(Type.Integer())),
  tags: Type.Optional(Type.Array(Type.Object({ name: Type.String() }))),
  filter: Type.Optional(Type.Object({ surface: Type.String() })),
  eventId: Type.Optional(Int64In),
});

function thrown(fn: () => unknown): InvalidArgumentError {
  try {
    fn();
  } catch (err) {
    if (err instanceof InvalidArgumentError) return err;
    throw err;
  }
  throw new Error('no error thrown');
}

describe('flag names', () => {
  it('maps kebab-case and snake_case flags to camelCase fields and back', () => {
    expect(flagToField('--project-id')).toBe('projectId');
    expect(flagToField('--project_id')).toBe('projectId');
    expect(flagToField('--page-size')).toBe('pageSize');
    expect(flagToField('--permissions')).toBe('permissions');
    expect(fieldToFlag('projectId')).toBe('--project-id');
    expect(fieldToFlag('deliveryEndpoint')).toBe('--delivery-endpoint');
  });
});

describe('argsToBody', () => {
  it('maps flags to body fields of the operation', () => {
    expect(argsToBody(schemaOf('create-project'), ['--project-id', 'demo', '--display-name', 'Demo shop', '--delivery-endpoint=ALT'])).toEqual({
      projectId: 'demo',
      displayName: 'Demo shop',
      deliveryEndpoint: 'ALT',
    });
  });

  it('builds arrays from comma-separated, repeated and JSON values', () => {
    const s = schemaOf('create-api-key');
    expect(argsToBody(s, ['--project-id', 'p', '--permissions', 'DELIVERY,TREATMENT_MANAGEMENT']).permissions).toEqual(['DELIVERY', 'TREATMENT_MANAGEMENT']);
    expect(argsToBody(s, ['--permissions', 'DELIVERY', '--permissions', ' TREATMENT_MANAGEMENT ']).permissions).toEqual(['DELIVERY', 'TREATMENT_MANAGEMENT']);
    expect(argsToBody(s, ['--permissions', '["LOG_EVENTS"]']).permissions).toEqual(['LOG_EVENTS']);
    expect(argsToBody(Kinds, ['--ids', '1,2', '--ids', '30']).ids).toEqual([1, 2, 30]);
    expect(argsToBody(Kinds, ['--tags', '{"name":"a"}', '--tags', '[{"name":"b"},{"name":"c"}]']).tags).toEqual([{ name: 'a' }, { name: 'b' }, { name: 'c' }]);
  });

  it('converts integers, numbers, booleans and objects by the schema', () => {
    expect(argsToBody(Kinds, ['--name', '42', '--count', '-7', '--ratio', '0.5', '--force', '--filter', '{"surface":"home"}'])).toEqual({
      name: '42',
      count: -7,
      ratio: 0.5,
      force: true,
      filter: { surface: 'home' },
    });
    expect(argsToBody(Kinds, ['--force', 'false', '--count', '1']).force).toBe(false);
    expect(argsToBody(Kinds, ['--force=true']).force).toBe(true);
    expect(argsToBody(schemaOf('list-changes'), ['--project-id', 'p', '--page-size', '25'])).toEqual({ projectId: 'p', pageSize: 25 });
  });

  it('keeps int64 values (number-or-string unions) as the decimal text', () => {
    expect(argsToBody(Kinds, ['--event-id', '9007199254740993']).eventId).toBe('9007199254740993');
  });

  it('leaves unconvertible values for the schema to report', () => {
    const body = argsToBody(schemaOf('list-changes'), ['--project-id', 'p', '--page-size', 'ten']);
    expect(body.pageSize).toBe('ten');
    expect(schemaErrors(schemaOf('list-changes'), body)).toEqual([{ field: 'pageSize', description: expect.stringMatching(/integer/) }]);
  });

  it('takes the whole body from --json (snake_case accepted) and lets flags add to it', () => {
    const s = schemaOf('create-api-key');
    expect(argsToBody(s, ['--json', '{"project_id":"p","permissions":["DELIVERY"]}'])).toEqual({ projectId: 'p', permissions: ['DELIVERY'] });
    expect(argsToBody(s, ['--json', '{"projectId":"p","description":"old"}', '--description', 'new'])).toEqual({ projectId: 'p', description: 'new' });
  });

  it('reports every bad argument at once, naming each flag', () => {
    const err = thrown(() => argsToBody(schemaOf('create-project'), ['stray', '--colour', 'red', '--project-id', 'a', '--project-id', 'b', '--display-name']));
    expect(err.httpStatus).toBe(400);
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.details.map((d) => d.field)).toEqual(['stray', '--display-name', '--colour', '--project-id']);
    expect(err.details.find((d) => d.field === '--colour')!.description).toMatch(/unknown option.*--project-id/);
    expect(err.details.find((d) => d.field === '--display-name')!.description).toBe('expects a value');
  });

  it('rejects --json that is not an object', () => {
    for (const json of ['[1]', 'nope', '3']) {
      expect(thrown(() => argsToBody(schemaOf('list-projects'), ['--json', json])).details).toEqual([{ field: '--json', description: expect.any(String) }]);
    }
  });
});

describe('schemaErrors and bodyFromArgs', () => {
  it('reports missing, unknown and malformed fields with the HTTP API’s JSON paths', () => {
    const details = schemaErrors(schemaOf('create-api-key'), { projectId: 'bad id', permissions: ['DELIVERY', 'ADMIN'], extra: 1 });
    expect(details).toEqual(
      expect.arrayContaining([
        { field: 'extra', description: 'unknown field' },
        { field: 'projectId', description: expect.stringMatching(/pattern/) },
        { field: 'permissions[1]', description: 'must be one of DELIVERY, LOG_EVENTS, TREATMENT_MANAGEMENT' },
      ]),
    );
    expect(details).toHaveLength(3);
    expect(schemaErrors(schemaOf('create-api-key'), {})).toEqual([
      { field: 'projectId', description: 'required field is missing' },
      { field: 'permissions', description: 'required field is missing' },
    ]);
  });

  it('folds the branches of an int64 union into one line', () => {
    expect(schemaErrors(Kinds, { name: 'n', count: 1, eventId: 'x1' })).toEqual([{ field: 'eventId', description: 'value does not match any allowed form' }]);
  });

  it('returns no error for a valid body', () => {
    expect(schemaErrors(schemaOf('revoke-api-key'), { projectId: 'p', keyId: 'k' })).toEqual([]);
  });

  it('bodyFromArgs returns the checked body or throws 400 with details', () => {
    expect(bodyFromArgs(schemaOf('get-project'), ['--project-id', 'demo'])).toEqual({ projectId: 'demo' });
    const err = thrown(() => bodyFromArgs(schemaOf('get-project'), []));
    expect(err.details).toEqual([{ field: 'projectId', description: 'required field is missing' }]);
    expect(err.message).toContain('projectId');
  });
});

describe('help', () => {
  it('lists every admin operation’s command and summary, derived from the list given', () => {
    const text = formatHelp(adminOperations);
    for (const op of adminOperations) expect(text).toMatch(new RegExp(`^  ${op.command} +${op.summary.replace(/[()]/g, '\\$&')}$`, 'm'));
    const extra = formatHelp([...adminOperations, { command: 'rotate-secrets', summary: 'Added later', body: Strict({}) }]);
    expect(extra).toMatch(/^ {2}rotate-secrets +Added later$/m);
  });

  it('describes a command’s options, their types and which are required', () => {
    const text = formatCommandHelp(adminOperations.find((o) => o.command === 'create-api-key')!);
    expect(text).toMatch(/--project-id <string> {2}\(required\)/);
    expect(text).toMatch(/--permissions <DELIVERY\|LOG_EVENTS\|TREATMENT_MANAGEMENT,\.\.\.> {2}\(required\)/);
    expect(text).toMatch(/--description <string>$/m);
  });
});
