#!/usr/bin/env node
// Times ONNX Runtime (onnxruntime-node, CPU execution provider) on the two feed-forward blocks
// that bench/onnxruntime/make_models.py writes, the comparator of bench/report's block table.
//
//   node bench/onnxruntime/time_blocks.js [--out FILE] [--rounds N] [--min-time S] [--quick] ...
//
// For each block, intra-op threads 1 and 2 (interOpNumThreads 1, graphOptimizationLevel 'all',
// executionMode 'sequential'; one session per thread count) and T tokens: a few warm-up calls,
// then `session.run` repeatedly for at least --min-time seconds and --min-iters calls, each call
// timed alone. A round is one such sweep over every point; with --rounds N the points are swept
// N times, and median_ms is the best of the N rounds' medians, min_ms the fastest call of all.
// The first output of every (block, threads, T) is checked against make_models.py's float64
// reference: max |diff| / (1 + |y|) <= the block's tolerance in manifest.json (1e-4 unless it says
// otherwise: 2e-2 for the MatMulNBits model with int8 activations) on the reference rows, or the script
// exits 1. --blocks picks among manifest.json's blocks: bert_ffn, llama_mlp (the default), and
// llama_mlp_q4_0, llama_mlp_q4_0_int8 (TinyLlama's MLP with MatMulNBits Q4_0 weights, T = 1, 32, 128).
// It prints the ORT version and the op types of the graph as written and as ORT ran it (saved
// once per block by a separate session through optimizedModelFilePath). JSON goes to --out
// or stdout; progress to stderr.
'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');

const ROOT = path.resolve(__dirname, '..', '..');
const TOLERANCE = 1e-4;

function parseArgs(argv) {
  const a = {
    models: path.join(ROOT, 'build-ort', 'models'), ortDir: process.env.EGELU_ORT_DIR || path.join(ROOT, 'build-ort'),
    out: null, rounds: 1, minTime: 0.5, minIters: 5, threads: [1, 2], tokens: null,
    blocks: ['bert_ffn', 'llama_mlp'], graph: true,
  };
  const list = (s) => s.split(',').filter(Boolean);
  for (let i = 2; i < argv.length; ++i) {
    const k = argv[i], v = () => {
      if (i + 1 >= argv.length) throw new Error(`${k} needs a value`);
      return argv[++i];
    };
    if (k === '--models') a.models = path.resolve(v());
    else if (k === '--ort-dir') a.ortDir = path.resolve(v());
    else if (k === '--out') a.out = path.resolve(v());
    else if (k === '--rounds') a.rounds = parseInt(v(), 10);
    else if (k === '--min-time') a.minTime = parseFloat(v());
    else if (k === '--min-iters') a.minIters = parseInt(v(), 10);
    else if (k === '--threads') a.threads = list(v()).map(Number);
    else if (k === '--tokens') a.tokens = list(v()).map(Number);
    else if (k === '--blocks') a.blocks = list(v());
    else if (k === '--no-graph') a.graph = false;
    else if (k === '--quick') { a.minTime = 0.05; a.minIters = 3; }
    else if (k === '-h' || k === '--help') {
      const lines = fs.readFileSync(__filename, 'utf8').split('\n').slice(1);  // the header comment
      process.stdout.write(lines.slice(0, lines.findIndex((l) => !l.startsWith('//')))
        .map((l) => l.slice(3)).join('\n') + '\n\nOptions: --models DIR --ort-dir DIR --out FILE --rounds N ' +
        '--min-time S --min-iters N --threads 1,2 --tokens 1,32,128,512 --blocks bert_ffn,llama_mlp ' +
        '(also llama_mlp_q4_0,llama_mlp_q4_0_int8) --no-graph --quick\n');
      process.exit(0);
    } else throw new Error(`unknown option ${k}`);
  }
  if (!(a.rounds >= 1 && a.minIters >= 1 && a.minTime >= 0)) throw new Error('bad --rounds, --min-iters or --min-time');
  return a;
}

// A C-order .npy file of float32 or float64: {shape, data (Float32Array or Float64Array)}.
function loadNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: Fortran order`);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim()).filter(Boolean).map(Number);
  const Type = { '<f4': Float32Array, '<f8': Float64Array }[descr];
  if (!Type) throw new Error(`${file}: dtype ${descr}, not <f4 or <f8`);
  const count = shape.reduce((p, n) => p * n, 1);
  const bytes = buf.subarray(start + headerLen, start + headerLen + count * Type.BYTES_PER_ELEMENT);
  return { shape, data: new Type(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length)) };
}

// The op types of an .onnx file's main graph, read straight off the protobuf
// (ModelProto.graph = 7, GraphProto.node = 1, NodeProto.op_type = 4, .domain = 7).
function onnxNodes(file) {
  const buf = fs.readFileSync(file);
  function* fields(start, end) {
    let p = start;
    const varint = () => {
      let v = 0, scale = 1, b;
      do { b = buf[p++]; v += (b & 0x7f) * scale; scale *= 128; } while (b & 0x80);
      return v;
    };
    while (p < end) {
      const key = varint(), field = Math.floor(key / 8), wire = key & 7;
      if (wire === 0) yield { field, value: varint() };
      else if (wire === 1) p += 8;
      else if (wire === 5) p += 4;
      else if (wire === 2) { const n = varint(); yield { field, start: p, end: p + n }; p += n; }
      else throw new Error(`${file}: protobuf wire type ${wire}`);
    }
  }
  const nodes = [];
  for (const g of fields(0, buf.length)) {
    if (g.field !== 7 || g.start === undefined) continue;
    for (const n of fields(g.start, g.end)) {
      if (n.field !== 1 || n.start === undefined) continue;
      let op = '', domain = '';
      for (const f of fields(n.start, n.end)) {
        if (f.field === 4) op = buf.toString('utf8', f.start, f.end);
        if (f.field === 7) domain = buf.toString('utf8', f.start, f.end);
      }
      nodes.push(domain && domain !== 'ai.onnx' ? `${domain}.${op}` : op);
    }
  }
  return nodes;
}

function sessionOptions(threads, extra = {}) {
  return {
    executionProviders: ['cpu'], intraOpNumThreads: threads, interOpNumThreads: 1,
    graphOptimizationLevel: 'all', executionMode: 'sequential', ...extra,
  };
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b), m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

// max |diff| / (1 + |y|) over the reference rows.
function checkOutput(y, d, ref) {
  let worst = 0;
  ref.rows.forEach((row, i) => {
    for (let j = 0; j < d; ++j) {
      const want = ref.values.data[i * d + j];
      worst = Math.max(worst, Math.abs(y[row * d + j] - want) / (1 + Math.abs(want)));
    }
  });
  return worst;
}

async function main() {
  const args = parseArgs(process.argv);
  const ort = require(path.join(args.ortDir, 'node_modules', 'onnxruntime-node'));
  const version = require(path.join(args.ortDir, 'node_modules', 'onnxruntime-node', 'package.json')).version;
  const manifest = JSON.parse(fs.readFileSync(path.join(args.models, 'manifest.json'), 'utf8'));
  const log = (s) => process.stderr.write(`time_blocks: ${s}\n`);
  log(`ONNX Runtime ${version} (onnxruntime-node, CPU EP), ${os.cpus().length} CPUs, min time ${args.minTime} s, ` +
      `min ${args.minIters} calls, ${args.rounds} round(s)`);

  const blocks = [], graph = {}, checks = [];
  for (const name of args.blocks) {
    const b = manifest.blocks[name];
    if (!b) throw new Error(`no block ${name} in ${args.models}/manifest.json`);
    const model = path.join(args.models, b.model);
    const flopsPerToken = (name.startsWith('llama_mlp') ? 6 : 4) * b.d_model * b.d_ff;
    const tolerance = b.tolerance ?? TOLERANCE;
    if (args.graph) {
      const saved = path.join(os.tmpdir(), `egelu-ort-${process.pid}-${name}.onnx`);
      const s = await ort.InferenceSession.create(model, sessionOptions(1, { optimizedModelFilePath: saved, logSeverityLevel: 3 }));
      await s.release();
      graph[name] = { written: onnxNodes(model), executed: onnxNodes(saved) };
      fs.rmSync(saved, { force: true });
      log(`${name}: written ${graph[name].written.join(', ')}; ORT ran ${graph[name].executed.join(', ')}`);
    }
    const sessions = {};
    for (const n of args.threads) sessions[n] = await ort.InferenceSession.create(model, sessionOptions(n));
    const tokens = (args.tokens || manifest.tokens).filter((t) => b.inputs[t]);
    const feeds = {}, refs = {};
    for (const t of tokens) {
      const x = loadNpy(path.join(args.models, b.inputs[t]));
      feeds[t] = { X: new ort.Tensor('float32', x.data, x.shape) };
      const r = b.references[t];
      refs[t] = { rows: r.rows, values: loadNpy(path.join(args.models, r.file)) };
    }
    blocks.push({ name, b, sessions, tokens, feeds, refs, flopsPerToken, tolerance });
  }

  const points = new Map();  // block/tokens/threads -> {medians: [], min}
  for (let round = 0; round < args.rounds; ++round) {
    for (const { name, b, sessions, tokens, feeds, refs, flopsPerToken, tolerance } of blocks) {
      for (const t of tokens) {
        for (const n of args.threads) {
          const session = sessions[n];
          const key = `${name}/${t}/${n}`;
          // Warm-up: at least two calls and 0.05 s; the first call's output is checked once.
          const first = await session.run(feeds[t]);
          if (!points.has(key)) {
            const err = checkOutput(first.Y.data, b.d_model, refs[t]);
            checks.push({ block: name, tokens: t, threads: n, max_rel_err: Number(err.toPrecision(3)), tolerance, ok: err <= tolerance });
            if (!(err <= tolerance)) log(`${key}: output check FAILED, max |diff|/(1+|y|) = ${err} > ${tolerance}`);
            points.set(key, { block: name, tokens: t, threads: n, flops: flopsPerToken * t, medians: [], min: Infinity });
          }
          const warmEnd = process.hrtime.bigint() + 50_000_000n;
          for (let i = 0; i < 1 || process.hrtime.bigint() < warmEnd; ++i) await session.run(feeds[t]);
          const times = [];
          const end = process.hrtime.bigint() + BigInt(Math.round(args.minTime * 1e9));
          while (times.length < args.minIters || process.hrtime.bigint() < end) {
            const t0 = process.hrtime.bigint();
            await session.run(feeds[t]);
            times.push(Number(process.hrtime.bigint() - t0) / 1e6);
          }
          const p = points.get(key);
          p.medians.push(median(times));
          p.min = Math.min(p.min, ...times);
          log(`round ${round + 1}: ${key}: median ${median(times).toFixed(3)} ms, min ${Math.min(...times).toFixed(3)} ms ` +
              `(${times.length} calls)`);
        }
      }
    }
  }
  for (const { sessions } of blocks) for (const s of Object.values(sessions)) await s.release();

  const results = [...points.values()].map((p) => {
    const best = Math.min(...p.medians);
    const ms = (v) => Number(v.toFixed(6));
    return {
      block: p.block, tokens: p.tokens, threads: p.threads, median_ms: ms(best), min_ms: ms(p.min),
      round_medians_ms: p.medians.map(ms), gflops: Number((p.flops / (best * 1e-3) / 1e9).toFixed(2)),
    };
  });
  const report = {
    ort_version: version, execution_provider: 'cpu', node: process.version, cpus: os.cpus().length,
    options: { rounds: args.rounds, min_time_s: args.minTime, min_iters: args.minIters, graph_optimization_level: 'all',
               inter_op_threads: 1, execution_mode: 'sequential' },
    results, checks, graph,
  };
  const text = JSON.stringify(report, null, 1) + '\n';
  if (args.out) fs.writeFileSync(args.out, text);
  else process.stdout.write(text);
  const failed = checks.filter((c) => !c.ok);
  if (failed.length) {
    log(`${failed.length} output check(s) failed`);
    process.exit(1);
  }
  for (const name of new Set(checks.map((c) => c.block))) {
    const mine = checks.filter((c) => c.block === name);
    log(`${name}: all ${mine.length} output checks passed (max |diff|/(1+|y|) ` +
        `${Math.max(...mine.map((c) => c.max_rel_err)).toExponential(2)} <= ${mine[0].tolerance})`);
  }
}

main().catch((e) => {
  process.stderr.write(`time_blocks: ${e.stack || e}\n`);
  process.exit(1);
});
