import { GraphBuilder, pyTypeOf, type NodeDefinition } from '../api.ts';
import { add, asTensor, fromTensor, imageTensor, maskRange, maskTensor, mul, pyError, pyTypeName, stackMean, sub, Tensor } from './tensor.ts';
import { sleepWithProgress } from './timing.ts';
import { variantSupport } from './tools.ts';
import type { ImageBatch, MaskBatch } from '../image-types.ts';

const CATEGORY = 'Testing/Nodes';

/** image1·(1−mask) + image2·mask, with the reference's shortcuts for an all-0 or all-1 mask. */
function mixImages(mask: MaskBatch, image1: ImageBatch, image2: ImageBatch): ImageBatch {
  const [lo, hi] = maskRange(mask);
  if (lo === 0 && hi === 0) return image1;
  if (lo === 1 && hi === 1) return image2;
  if (image1 === null || image1 === undefined || image2 === null || image2 === undefined) {
    throw pyError('TypeError', "unsupported operand type(s) for *: 'NoneType' and 'Tensor'");
  }
  const a = imageTensor(image1);
  let m = maskTensor(mask);
  m = new Tensor([...m.shape, 1], m.data);
  const ch = a.shape[3]!;
  if (m.shape[3]! < ch) {
    // mask.repeat(1, 1, 1, C)
    const out = new Float32Array(m.data.length * ch);
    for (let i = 0; i < m.data.length; i++) out.fill(m.data[i]!, i * ch, (i + 1) * ch);
    m = new Tensor([m.shape[0]!, m.shape[1]!, m.shape[2]!, ch], out);
  }
  const result = add(mul(a, sub(1, m)), mul(imageTensor(image2), m));
  return fromTensor(result) as ImageBatch;
}

/** `input1 * input2` on what the custom validation nodes accept (images or floats). */
function product(input1: unknown, input2: unknown): unknown {
  if (typeof input1 === 'number' && typeof input2 === 'number') {
    return fromTensor(mul(mul(Tensor.full([1, 512, 512, 3], 1), input1), input2));
  }
  return fromTensor(mul(asTensor(input1), asTensor(input2)));
}

/** VALIDATE_INPUTS of TestCustomValidation1/2: a constant must be a float (the literal `5.0`, not `5`), as the reference's isinstance(v, float). */
function tensorOrFloat(inputs: Record<string, unknown>, name: string): string | undefined {
  const v = inputs[name];
  if (v === null || v === undefined) return undefined;
  if (typeof v === 'number' && pyTypeOf(inputs, name) === 'float') return undefined;
  return `Invalid type of ${name}: <class '${typeof v === 'number' ? 'int' : pyTypeName(v)}'>`;
}

function customValidation(name: string, fn: NodeDefinition['validateInputs']): NodeDefinition {
  return {
    name,
    displayName: `Custom Validation ${name.slice(-1)}`,
    category: CATEGORY,
    inputs: { required: { input1: ['IMAGE,FLOAT'], input2: ['IMAGE,FLOAT'] } },
    outputs: ['IMAGE'],
    validateInputs: fn,
    execute: ({ input1, input2 }) => [product(input1, input2)],
  };
}

/** specific_tests.py. */
export const specificTestNodes: NodeDefinition[] = [
  {
    name: 'TestLazyMixImages',
    displayName: 'Lazy Mix Images',
    category: CATEGORY,
    inputs: { required: { image1: ['IMAGE', { lazy: true }], image2: ['IMAGE', { lazy: true }], mask: ['MASK'] } },
    outputs: ['IMAGE'],
    checkLazyStatus: ({ mask, image1, image2 }) => {
      const [lo, hi] = maskRange(mask);
      const needed: string[] = [];
      if ((image1 === null || image1 === undefined) && (lo !== 1 || hi !== 1)) needed.push('image1');
      if ((image2 === null || image2 === undefined) && (lo !== 0 || hi !== 0)) needed.push('image2');
      return needed;
    },
    execute: ({ mask, image1, image2 }) => [mixImages(mask, image1, image2)],
  },
  {
    name: 'TestVariadicAverage',
    displayName: 'Variadic Average',
    category: CATEGORY,
    inputs: { required: { input1: ['IMAGE'] } },
    outputs: ['IMAGE'],
    execute: (kwargs) => {
      const inputs: unknown[] = [kwargs.input1];
      while (`input${inputs.length + 1}` in kwargs) inputs.push(kwargs[`input${inputs.length + 1}`]);
      const tensors = inputs.map((v) => {
        const t = asTensor(v);
        return typeof t === 'number' ? new Tensor([], Float32Array.of(t)) : t;
      });
      return [fromTensor(stackMean(tensors))];
    },
  },
  {
    name: 'TestCustomIsChanged',
    displayName: 'Custom IsChanged',
    category: CATEGORY,
    inputs: { required: { image: ['IMAGE'] }, optional: { should_change: ['BOOL', { default: false }] } },
    outputs: ['IMAGE'],
    isChanged: ({ should_change }) => (should_change ? NaN : false),
    execute: ({ image }) => [image],
  },
  {
    name: 'TestIsChangedWithConstants',
    displayName: 'IsChanged With Constants',
    category: CATEGORY,
    inputs: { required: { image: ['IMAGE'], value: ['FLOAT', { default: 1.0, min: 0.0, max: 10.0 }] } },
    outputs: ['IMAGE'],
    // Called with constant inputs only: a linked image is None here.
    isChanged: ({ image, value }) => (image === null || image === undefined ? value : imageTensor(image).mean() * value),
    execute: ({ image, value }) => [fromTensor(mul(imageTensor(image), value))],
  },
  customValidation('TestCustomValidation1', {
    inputs: ['input1', 'input2'],
    fn: (inputs) => tensorOrFloat(inputs, 'input1') ?? tensorOrFloat(inputs, 'input2') ?? true,
  }),
  customValidation('TestCustomValidation2', {
    inputs: ['input_types', 'input1', 'input2'],
    fn: (inputs) => {
      const { input_types } = inputs;
      const bad = tensorOrFloat(inputs, 'input1') ?? tensorOrFloat(inputs, 'input2');
      if (bad) return bad;
      const types = (input_types ?? {}) as Record<string, string>;
      for (const k of ['input1', 'input2']) {
        if (k in types && types[k] !== 'IMAGE' && types[k] !== 'FLOAT') return `Invalid type of ${k}: ${types[k]}`;
      }
      return true;
    },
  }),
  variantSupport(customValidation('TestCustomValidation3', undefined)),
  {
    name: 'TestCustomValidation4',
    displayName: 'Custom Validation 4',
    category: CATEGORY,
    inputs: { required: { input1: ['FLOAT'], input2: ['FLOAT'] } },
    outputs: ['IMAGE'],
    validateInputs: {
      inputs: ['input1', 'input2'],
      fn: ({ input1, input2 }) => {
        for (const [k, v] of [
          ['input1', input1],
          ['input2', input2],
        ] as const) {
          if (v !== null && v !== undefined && typeof v !== 'number') return `Invalid type of ${k}: <class '${pyTypeName(v)}'>`;
        }
        return true;
      },
    },
    execute: ({ input1, input2 }) => [product(input1, input2)],
  },
  {
    name: 'TestCustomValidation5',
    displayName: 'Custom Validation 5',
    category: CATEGORY,
    inputs: { required: { input1: ['FLOAT', { min: 0.0, max: 1.0 }], input2: ['FLOAT', { min: 0.0, max: 1.0 }] } },
    outputs: ['IMAGE'],
    validateInputs: { inputs: '*', fn: (kwargs) => (kwargs.input2 === 7.0 ? "7s are not allowed. I've never liked 7s." : true) },
    execute: ({ input1, input2 }) => [fromTensor(mul(Tensor.full([1, 512, 512, 3], 1), input1 * input2))],
  },
  {
    name: 'TestDynamicDependencyCycle',
    displayName: 'Dynamic Dependency Cycle',
    category: CATEGORY,
    inputs: { required: { input1: ['IMAGE'], input2: ['IMAGE'] } },
    outputs: ['IMAGE'],
    execute: ({ input1, input2 }) => {
      const g = new GraphBuilder();
      const mask = g.node('StubMask', undefined, { value: 0.5, height: 512, width: 512, batch_size: 1 });
      const mix1 = g.node('TestLazyMixImages', undefined, { image1: input1, mask: mask.out(0) });
      const mix2 = g.node('TestLazyMixImages', undefined, { image1: mix1.out(0), image2: input2, mask: mask.out(0) });
      mix1.setInput('image2', mix2.out(0));
      return { result: [mix2.out(0)], expand: g.finalize() };
    },
  },
  {
    name: 'TestMixedExpansionReturns',
    displayName: 'Mixed Expansion Returns',
    category: CATEGORY,
    inputs: { required: { input1: ['FLOAT'] } },
    outputs: ['IMAGE', 'IMAGE'],
    execute: ({ input1 }) => {
      const white = () => fromTensor(Tensor.full([1, 512, 512, 3], 1));
      if (input1 <= 0.1) return [fromTensor(mul(Tensor.full([1, 512, 512, 3], 1), 0.1)), white()];
      if (input1 <= 0.2) return { result: [fromTensor(mul(Tensor.full([1, 512, 512, 3], 1), 0.2)), white()] };
      const g = new GraphBuilder();
      const mask = g.node('StubMask', undefined, { value: 0.3, height: 512, width: 512, batch_size: 1 });
      const black = g.node('StubImage', undefined, { content: 'BLACK', height: 512, width: 512, batch_size: 1 });
      const whiteNode = g.node('StubImage', undefined, { content: 'WHITE', height: 512, width: 512, batch_size: 1 });
      const mix = g.node('TestLazyMixImages', undefined, { image1: black.out(0), image2: whiteNode.out(0), mask: mask.out(0) });
      return { result: [mix.out(0), white()], expand: g.finalize() };
    },
  },
  {
    name: 'TestSamplingInExpansion',
    displayName: 'Sampling In Expansion',
    category: CATEGORY,
    inputs: {
      required: {
        model: ['MODEL'],
        clip: ['CLIP'],
        vae: ['VAE'],
        seed: ['INT', { default: 0, min: 0, max: 0xffffffffffffffff }],
        steps: ['INT', { default: 20, min: 1, max: 100 }],
        cfg: ['FLOAT', { default: 7.0, min: 0.0, max: 30.0 }],
        prompt: ['STRING', { multiline: true, default: 'a beautiful landscape with mountains and trees' }],
        negative_prompt: ['STRING', { multiline: true, default: 'blurry, bad quality, worst quality' }],
      },
    },
    outputs: ['IMAGE'],
    execute: ({ model, clip, vae, seed, steps, cfg, prompt, negative_prompt }) => {
      const g = new GraphBuilder();
      const positive = g.node('CLIPTextEncode', undefined, { text: prompt, clip });
      const negative = g.node('CLIPTextEncode', undefined, { text: negative_prompt, clip });
      const latent = g.node('EmptyLatentImage', undefined, { width: 512, height: 512, batch_size: 1 });
      const sampler = g.node('KSampler', undefined, {
        model,
        positive: positive.out(0),
        negative: negative.out(0),
        latent_image: latent.out(0),
        seed,
        steps,
        cfg,
        sampler_name: 'euler_ancestral',
        scheduler: 'normal',
      });
      const output = g.node('VAEDecode', undefined, { samples: sampler.out(0), vae });
      return { result: [output.out(0)], expand: g.finalize() };
    },
  },
  {
    name: 'TestSleep',
    displayName: 'Test Sleep',
    category: '_for_testing',
    inputs: {
      required: {
        value: ['*', {}],
        seconds: ['FLOAT', { default: 1.0, min: 0.0, max: 9999.0, step: 0.01, tooltip: 'The amount of seconds to sleep.' }],
      },
      hidden: { unique_id: 'UNIQUE_ID' },
    },
    outputs: ['*'],
    async execute({ value, seconds }, ctx) {
      await sleepWithProgress(seconds, ctx, (elapsed) => ctx.progress(elapsed, seconds));
      return [value];
    },
  },
  {
    name: 'TestParallelSleep',
    displayName: 'Test Parallel Sleep',
    category: '_for_testing',
    inputs: {
      required: {
        image1: ['IMAGE'],
        image2: ['IMAGE'],
        image3: ['IMAGE'],
        sleep1: ['FLOAT', { default: 0.5, min: 0.0, max: 10.0, step: 0.01 }],
        sleep2: ['FLOAT', { default: 0.5, min: 0.0, max: 10.0, step: 0.01 }],
        sleep3: ['FLOAT', { default: 0.5, min: 0.0, max: 10.0, step: 0.01 }],
      },
      hidden: { unique_id: 'UNIQUE_ID' },
    },
    outputs: ['IMAGE'],
    outputNode: true,
    execute: ({ image1, image2, image3, sleep1, sleep2, sleep3 }) => {
      const g = new GraphBuilder();
      const s1 = g.node('TestSleep', undefined, { value: image1, seconds: sleep1 });
      const s2 = g.node('TestSleep', undefined, { value: image2, seconds: sleep2 });
      const s3 = g.node('TestSleep', undefined, { value: image3, seconds: sleep3 });
      const blend = g.node('TestVariadicAverage', undefined, { input1: s1.out(0), input2: s2.out(0), input3: s3.out(0) });
      return { result: [blend.out(0)], expand: g.finalize() };
    },
  },
  {
    name: 'TestOutputNodeWithSocketOutput',
    displayName: 'Test Output Node With Socket Output',
    category: '_for_testing',
    inputs: { required: { image: ['IMAGE'], value: ['FLOAT', { default: 1.0, min: 0.0, max: 10.0 }] } },
    outputs: ['IMAGE'],
    outputNode: true,
    execute: ({ image, value }) => [fromTensor(mul(imageTensor(image), value))],
  },
];
