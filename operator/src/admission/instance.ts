// Admission of ApplicationInstances, pure. The operator acts on the Helm release an instance names, with
// its own identity, and RBAC grants day-2 verbs per instance name, so the release an instance names is a
// trust boundary:
// - spec.release.namespace naming another namespace would let whoever may create instances here read that
//   namespace's release (status, chart, capabilities) through the operator;
// - spec.release.name naming a release another instance of the namespace names would let whoever holds a
//   verb on this instance act on the other's release (DESIGN §6, ADR 0027);
// - spec.appRef.chart.name reaches helm's command line, so it must be a name, never a flag.
// Each is refused at its field. The last two are judged only when the field changes, so an object stored
// before these rules (and the operator's own writes to it) is not locked out of every other edit.
//
// The webhook is failurePolicy Ignore: the controllers enforce the same rules for whatever gets past
// admission (Ready=False/ReleaseNamespaceForbidden or ReleaseClaimed, nothing read; the helm engine refuses
// a bad chart name), so the operator being down never blocks instances, and the denial here is the early,
// readable answer. Sibling instances come from the operator's cache: two creates racing past it are
// settled by the controllers (the older keeps the release).
import { CHART_NAME_PATTERN } from '../api/applicationinstance.ts';
import { invalid, isRecord, type Problem, respond } from './decision.ts';
import type { AdmissionRequest, AdmissionResponse } from './review.ts';

/** What the rules read of an instance, narrowed from untrusted JSON. */
interface InstanceView {
  name: string;
  release?: string;
  releaseNamespace?: unknown;
  chartName?: unknown;
}

function view(obj: unknown): InstanceView {
  const o = isRecord(obj) ? obj : {};
  const meta = isRecord(o.metadata) ? o.metadata : {};
  const spec = isRecord(o.spec) ? o.spec : {};
  const release = isRecord(spec.release) ? spec.release : {};
  const appRef = isRecord(spec.appRef) ? spec.appRef : {};
  const chart = isRecord(appRef.chart) ? appRef.chart : {};
  return {
    name: typeof meta.name === 'string' ? meta.name : '',
    ...(typeof release.name === 'string' ? { release: release.name } : {}),
    releaseNamespace: release.namespace,
    chartName: chart.name,
  };
}

const chartName = new RegExp(CHART_NAME_PATTERN);

/**
 * @param siblings the other ApplicationInstances of the request's namespace (the operator's cache).
 */
export function decideInstance(req: AdmissionRequest, siblings: readonly unknown[] = []): AdmissionResponse {
  if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') return respond(req.uid, []);
  const own = req.namespace ?? '';
  const next = view(req.object);
  const before = req.operation === 'UPDATE' ? view(req.oldObject) : undefined;
  const problems: Problem[] = [];
  const asked = next.releaseNamespace;
  if (asked !== undefined && asked !== '' && asked !== own) {
    problems.push(
      invalid(
        'spec.release.namespace',
        `Forbidden: ${JSON.stringify(asked)}: an ApplicationInstance describes a release in the instance's own namespace ${own}; leave spec.release.namespace out (or set it to ${own}) and create the instance in the release's namespace`,
        'FieldValueForbidden',
      ),
    );
  }
  if (next.release !== undefined && next.release !== before?.release) {
    const other = siblings
      .map(view)
      .find(
        (s) =>
          s.name !== next.name &&
          s.release === next.release &&
          (s.releaseNamespace === undefined || s.releaseNamespace === '' || s.releaseNamespace === own),
      );
    if (other) {
      problems.push(
        invalid(
          'spec.release.name',
          `Forbidden: ${JSON.stringify(next.release)}: Helm release ${next.release} is already described by ApplicationInstance ${other.name}; an ApplicationInstance may only name a release no other instance of the namespace names (the operator acts on the release with the verbs granted on the instance). Name this instance's own release, or operate on ${other.name}`,
          'FieldValueForbidden',
        ),
      );
    }
  }
  const name = next.chartName;
  if (
    name !== undefined &&
    name !== before?.chartName &&
    (typeof name !== 'string' || !chartName.test(name))
  ) {
    problems.push(
      invalid(
        'spec.appRef.chart.name',
        `Invalid value: ${JSON.stringify(name)}: a chart name is letters, digits, ".", "_" and "-", starting with a letter or digit (${CHART_NAME_PATTERN}); it is passed to helm and must never read as a flag`,
      ),
    );
  }
  return respond(req.uid, problems);
}
