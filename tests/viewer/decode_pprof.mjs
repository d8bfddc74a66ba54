// decode_pprof.mjs: reads a pprof profile (gzipped or not) with the npm
// pprof-format decoder and prints it as JSON, names resolved: the second
// reader of report --pprof's files in tests/integration/test_pprof.py
// (the first is `go tool pprof`).
//
// Usage: node tests/viewer/decode_pprof.mjs PROFILE.pb.gz
// Prints {"sample_types": ["calls/count", ...], "period": N,
//   "period_type": "cpu/nanoseconds", "comments": [...],
//   "samples": [{"stack": [frame, ... leaf first], "values": [N, ...],
//                "labels": {"pid": N, "comm": "python3", ...}}],
//   "functions": [{"name", "system_name", "filename"}],
//   "locations": [{"function": system name, "line": N, "mapping": file or "",
//                  "build_id": its mapping's build id or "", "address": N}]}
// where a frame is its function's system name (the name gpuprof recorded).
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { Profile } from 'pprof-format';

const raw = readFileSync(process.argv[2]);
const profile = Profile.decode(raw[0] === 0x1f && raw[1] === 0x8b ? gunzipSync(raw) : raw);
const strings = profile.stringTable.strings;
const s = (i) => strings[Number(i)];
const functions = new Map(profile.function.map((f) => [Number(f.id), f]));
const mappings = new Map(profile.mapping.map((m) => [Number(m.id), m]));
const locations = new Map(profile.location.map((l) => [Number(l.id), l]));
const frame = (id) => s(functions.get(Number(locations.get(Number(id)).line[0].functionId)).systemName);
console.log(JSON.stringify({
  sample_types: profile.sampleType.map((t) => `${s(t.type)}/${s(t.unit)}`),
  period: Number(profile.period),
  period_type: profile.periodType ? `${s(profile.periodType.type)}/${s(profile.periodType.unit)}` : null,
  comments: profile.comment.map(s),
  samples: profile.sample.map((x) => ({
    stack: x.locationId.map(frame),
    values: x.value.map(Number),
    labels: Object.fromEntries(x.label.map((l) => [s(l.key), Number(l.str) ? s(l.str) : Number(l.num)])),
  })),
  functions: profile.function.map((f) => ({ name: s(f.name), system_name: s(f.systemName), filename: s(f.filename) })),
  locations: profile.location.map((l) => ({
    function: s(functions.get(Number(l.line[0].functionId)).systemName),
    name: s(functions.get(Number(l.line[0].functionId)).name),
    filename: s(functions.get(Number(l.line[0].functionId)).filename),
    line: Number(l.line[0].line),
    mapping: Number(l.mappingId) ? s(mappings.get(Number(l.mappingId)).filename) : '',
    build_id: Number(l.mappingId) ? s(mappings.get(Number(l.mappingId)).buildId) : '',
    address: Number(l.address),
  })),
}));
