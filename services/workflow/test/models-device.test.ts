/**
 * `--device` without a GPU: the device names, the providers chosen for each,
 * the CUDA provider's libraries (linked from --cuda-provider-dir, never
 * downloaded), and the start-up errors of a device that is missing. On a
 * machine with a usable GPU the start-up cases check that the service starts
 * on it instead.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { CUDA_PROVIDER_LIBRARIES, DeviceError, deviceName, executionProviders, installCudaProvider, ortLibraryDir, parseDevice, probeDevice } from '../src/models/device.ts';
import { startWorkflow } from './helpers.ts';

test('device names parse to the providers ONNX Runtime is given; others are refused', () => {
  assert.deepEqual(parseDevice('cpu'), { kind: 'cpu' });
  assert.deepEqual(parseDevice(' CUDA '), { kind: 'cuda', index: 0 });
  assert.deepEqual(parseDevice('cuda:3'), { kind: 'cuda', index: 3 });
  assert.deepEqual(parseDevice('webgpu'), { kind: 'webgpu' });
  assert.deepEqual(parseDevice('gpu'), { kind: 'webgpu' });
  assert.deepEqual(executionProviders(parseDevice('cuda:1')), [{ name: 'cuda', deviceId: 1 }]);
  assert.deepEqual(executionProviders(parseDevice('webgpu')), ['webgpu']);
  assert.deepEqual(executionProviders(parseDevice('cpu')), ['cpu']);
  assert.equal(deviceName(parseDevice('cuda:2')), 'cuda:2');
  for (const bad of ['tpu', 'cuda:', 'cuda:-1', 'cuda:x', 'cuda:1234', '', 'mps']) assert.throws(() => parseDevice(bad), (e: Error) => e instanceof DeviceError && /--device must be cpu, webgpu, cuda or cuda:N/.test(e.message), bad);
});

test('the CUDA provider: present, linked from --cuda-provider-dir, or a clear error; nothing is downloaded', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cuda-provider-'));
  try {
    const lib = path.join(root, 'ort');
    const given = path.join(root, 'given');
    fs.mkdirSync(lib);
    fs.mkdirSync(given);
    assert.throws(() => installCudaProvider(undefined, lib), /CUDA provider is not installed .*libonnxruntime_providers_shared\.so, libonnxruntime_providers_cuda\.so missing.*pass --cuda-provider-dir/);
    assert.throws(() => installCudaProvider(given, lib), /--cuda-provider-dir .* lacks libonnxruntime_providers_shared\.so, libonnxruntime_providers_cuda\.so/);
    for (const f of CUDA_PROVIDER_LIBRARIES) fs.writeFileSync(path.join(given, f), 'stand-in');
    installCudaProvider(given, lib);
    for (const f of CUDA_PROVIDER_LIBRARIES) assert.equal(fs.realpathSync(path.join(lib, f)), fs.realpathSync(path.join(given, f)));
    // Present: nothing more to do (a second start links nothing).
    installCudaProvider(undefined, lib);
    fs.rmSync(path.join(lib, CUDA_PROVIDER_LIBRARIES[1]!));
    fs.chmodSync(lib, 0o500);
    if (process.getuid?.() !== 0) assert.throws(() => installCudaProvider(given, lib), /cannot link libonnxruntime_providers_cuda\.so .*copy/);
  } finally {
    fs.chmodSync(path.join(root, 'ort'), 0o700);
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test('a device that is missing is a clear start-up error; the CPU needs no probe', async () => {
  await probeDevice({ kind: 'cpu' });
  const hasCuda = CUDA_PROVIDER_LIBRARIES.every((f) => fs.existsSync(path.join(ortLibraryDir(), f)));
  if (!hasCuda) await assert.rejects(probeDevice({ kind: 'cuda', index: 0 }), (e: Error) => e instanceof DeviceError && /--device cuda: ONNX Runtime's CUDA provider is not installed/.test(e.message));
  try {
    await probeDevice({ kind: 'webgpu' });
  } catch (err) {
    assert.ok(err instanceof DeviceError);
    assert.match(err.message, /^--device webgpu: no usable WebGPU adapter/);
    assert.doesNotMatch(err.message, /onnxruntime_src/);
  }
});

test('the service refuses to start on a device it cannot use, and reports the device it runs on', async () => {
  await assert.rejects(startWorkflow('sqlite', { device: 'tpu' }), /--device must be cpu, webgpu, cuda or cuda:N, got "tpu"/);
  let srv: Awaited<ReturnType<typeof startWorkflow>> | undefined;
  try {
    srv = await startWorkflow('sqlite', { device: 'webgpu' });
  } catch (err) {
    assert.match((err as Error).message, /--device webgpu: no usable WebGPU adapter/);
  }
  if (srv) {
    // A machine with a GPU: the service runs on it and says so.
    const r = await srv.http.get('/system_stats');
    assert.equal(r.body.devices[0].type, 'webgpu');
    await srv.close();
  }
  const cpu = await startWorkflow('sqlite', { device: 'cpu' });
  try {
    const r = await cpu.http.get('/system_stats');
    assert.equal(r.body.devices[0].type, 'cpu');
    assert.equal(r.body.devices[0].name, 'cpu');
  } finally {
    await cpu.close();
  }
});
