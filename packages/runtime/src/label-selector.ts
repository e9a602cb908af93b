// The equality-based label selectors informers are started with (`app`, `!app`, `app=shop`,
// `app==shop`, `app!=shop`, comma-separated), matched against an object's labels, so a write can be
// shown only by the caches whose selector holds the object. Set-based requirements (`in`, `notin`) are
// not parsed: `undefined` says the answer is unknown.

/** True/false when `selector` does/does not select `labels`; undefined when it cannot be told. */
export function matchesLabelSelector(
  selector: string,
  labels: Readonly<Record<string, string>> | undefined,
): boolean | undefined {
  let all = true;
  for (const raw of selector.split(',')) {
    const req = raw.trim();
    if (req === '') continue;
    const m = /^(!?)([A-Za-z0-9_./-]+)\s*(?:(==|=|!=)\s*([A-Za-z0-9_.-]*))?$/.exec(req);
    if (!m) return undefined;
    const [, not, key = '', op, value] = m;
    const has = labels !== undefined && Object.hasOwn(labels, key);
    let ok: boolean;
    if (op === undefined) ok = not ? !has : has;
    else if (not) return undefined;
    else if (op === '!=') ok = !has || labels?.[key] !== value;
    else ok = has && labels?.[key] === value;
    all &&= ok;
  }
  return all;
}
