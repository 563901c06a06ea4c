import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { NodeScope } from '../nodes/api.ts';
import type { Rendered } from '../engine/registry.ts';
import type { NodeRegistry } from '../engine/registry.ts';
import { dual } from './common.ts';
import { deviceName, type DeviceSpec } from '../models/device.ts';
import { TORCH_DTYPE, type UNetPrecision } from '../models/precision.ts';

export const SERVICE_VERSION = '0.1.0';

/** Serves pre-rendered JSON with its ETag; a matching If-None-Match (any tag of the list, weak or strong) gets 304. */
export function sendRendered(req: FastifyRequest, reply: FastifyReply, r: Rendered, cacheControl = 'no-cache'): FastifyReply {
  reply.header('ETag', r.etag).header('Cache-Control', cacheControl);
  const inm = req.headers['if-none-match'];
  if (typeof inm === 'string') {
    const strip = (t: string) => t.trim().replace(/^W\//, '');
    const tags = inm.split(',').map(strip);
    if (tags.includes('*') || tags.includes(strip(r.etag))) return reply.code(304).send();
  }
  return reply.type('application/json').send(r.body);
}

const SECRET_FLAG = /^--?[\w-]*(key|token|secret|password)[\w-]*$/i;

/** The command line as system_stats shows it, without the values of flags that hold secrets (--api-key, --openai-api-key …). */
export function redactArgv(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const eq = a.indexOf('=');
    if (eq > 0 && SECRET_FLAG.test(a.slice(0, eq))) out.push(`${a.slice(0, eq)}=[redacted]`);
    else if (SECRET_FLAG.test(a) && i + 1 < argv.length && !argv[i + 1]!.startsWith('--')) {
      out.push(a, '[redacted]');
      i++;
    } else out.push(a);
  }
  return out;
}

export function features(maxUploadSize: number, assets = false): Record<string, unknown> {
  return {
    supports_preview_metadata: true,
    max_upload_size: maxUploadSize,
    extension: { manager: { supports_v4: true } },
    node_replacements: true,
    assets,
  };
}

/** What /system_stats says of the loaded models (not in the reference's answer, which has no such list): names by folder, never the server's paths. */
export interface ModelsReport {
  loaded(): Array<{ path: string; part: string; bytes: number; thread: number | null }>;
  /** --max-model-memory in bytes per execution thread (0: none). */
  budget: number;
  /** Hosted runtime: workspaces share the process, so only the totals are shown. */
  namesHidden: boolean;
}

function modelsOf(r: ModelsReport): Record<string, unknown> {
  const loaded = r.loaded();
  const memory = loaded.reduce((s, m) => s + m.bytes, 0);
  return {
    loaded: r.namesHidden ? [] : loaded.map((m) => ({ name: `${path.basename(path.dirname(m.path))}/${path.basename(m.path)}`, part: m.part, memory: m.bytes, execution_thread: m.thread })),
    count: loaded.length,
    memory,
    max_model_memory: r.budget > 0 ? r.budget : null,
  };
}

/**
 * The device entry: on the CPU the reference's get_total_memory/get_free_memory give the system's memory for both
 * pairs; a GPU's memory is not known to ONNX Runtime's JavaScript API, so it is reported as 0 (unknown).
 */
function deviceEntry(d: DeviceSpec, total: number, free: number): Record<string, unknown> {
  if (d.kind === 'cpu') return { name: 'cpu', type: 'cpu', index: null, vram_total: total, vram_free: free, torch_vram_total: total, torch_vram_free: free };
  const index = d.kind === 'cuda' ? d.index : 0;
  return { name: `${deviceName(d)} (onnxruntime ${d.kind === 'cuda' ? 'CUDA' : 'WebGPU'})`, type: d.kind, index, vram_total: 0, vram_free: 0, torch_vram_total: 0, torch_vram_free: 0 };
}

export function systemRoutes(
  app: FastifyInstance,
  registry: NodeRegistry,
  opts: { folders?: (req: FastifyRequest) => NodeScope; maxUploadSize: number; assets?: boolean; extraFeatures?: Record<string, unknown>; models?: ModelsReport; device?: DeviceSpec; precision?: UNetPrecision },
): void {
  dual(app, 'GET', '/object_info', { operationId: 'getObjectInfo', tags: ['node'] }, (req, reply) => sendRendered(req, reply, registry.objectInfoRendered(opts.folders?.(req))));

  dual(app, 'GET', '/object_info/:node_class', { operationId: 'getObjectInfoByClass', tags: ['node'] }, (req, reply) => {
    const r = registry.classRendered((req.params as { node_class: string }).node_class, opts.folders?.(req));
    if (!r) return reply.code(404).type('application/json').send('{}');
    return sendRendered(req, reply, r);
  });

  dual(app, 'GET', '/system_stats', { operationId: 'getSystemStats', tags: ['system'] }, () => {
    const total = os.totalmem();
    const free = os.freemem();
    return {
      system: {
        // Python's os.name, as the reference reports it.
        os: process.platform === 'win32' ? 'nt' : 'posix',
        ram_total: total,
        ram_free: free,
        comfyui_version: SERVICE_VERSION,
        required_frontend_version: null,
        installed_templates_version: null,
        required_templates_version: null,
        comfy_package_versions: [],
        python_version: `Node.js ${process.version}`,
        pytorch_version: 'none (CPU, sharp)',
        embedded_python: false,
        deploy_environment: 'local',
        argv: redactArgv(process.argv.slice(1)),
      },
      // unet_dtype: the diffusion model's compute precision (--force-fp16, --fp16-unet, …), beside the device it runs on.
      // vae_dtype: the VAE's compute precision (--fp16-vae); text_encoder_dtype: how the text encoders' weights are stored (they compute in float32).
      devices: [
        {
          ...deviceEntry(opts.device ?? { kind: 'cpu' }, total, free),
          unet_dtype: opts.precision?.dtype === 'fp16' ? 'float16' : 'float32',
          upcast_attention: opts.precision?.upcastAttention === true,
          vae_dtype: opts.precision?.vae?.dtype === 'fp16' ? 'float16' : 'float32',
          text_encoder_dtype: TORCH_DTYPE[opts.precision?.textEncoder?.storage ?? 'fp32'].slice('torch.'.length),
        },
      ],
      ...(opts.models ? { models: modelsOf(opts.models) } : {}),
    };
  });

  dual(app, 'GET', '/features', { operationId: 'getFeatures', tags: ['system'] }, () => ({ ...features(opts.maxUploadSize, opts.assets === true), ...opts.extraFeatures }));
}
