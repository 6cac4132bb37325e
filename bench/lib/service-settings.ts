/** A named setting of the service for the comparison tools: `NAME:K=V,K=V` → its name and environment. */
export function parseSetting(arg: string): { name: string; env: Record<string, string> } {
  const [name, rest = ''] = arg.split(':', 2);
  const env: Record<string, string> = {};
  for (const kv of rest.split(',').filter(Boolean)) {
    const [k, v] = kv.split('=', 2);
    env[k] = v;
  }
  return { name, env };
}
