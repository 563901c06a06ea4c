// Starter workflows shipped with the page (API format, laid out on load).
// The first one is what a first start shows.

export const TEMPLATES = [
  {
    id: 'invert',
    title: 'Make, invert and save an image',
    description: 'A solid colour image, inverted, saved to output/ and previewed.',
    prompt: {
      1: { class_type: 'EmptyImage', inputs: { width: 512, height: 512, batch_size: 1, color: 0x3a7bd5 } },
      2: { class_type: 'ImageInvert', inputs: { image: ['1', 0] } },
      3: { class_type: 'SaveImage', inputs: { images: ['2', 0], filename_prefix: 'ComfyUI' } },
      4: { class_type: 'PreviewImage', inputs: { images: ['1', 0] } },
    },
  },
  {
    id: 'load-transform',
    title: 'Load, transform and save an image',
    description: 'Upload an image in Load Image, then scale, blur and flip it.',
    prompt: {
      1: { class_type: 'LoadImage', inputs: { image: '' } },
      2: { class_type: 'ImageScaleBy', inputs: { image: ['1', 0], upscale_method: 'bilinear', scale_by: 0.5 } },
      3: { class_type: 'ImageBlur', inputs: { image: ['2', 0], blur_radius: 2, sigma: 1 } },
      4: { class_type: 'ImageFlip', inputs: { image: ['3', 0], flip_method: 'x-axis: vertically' } },
      5: { class_type: 'SaveImage', inputs: { images: ['4', 0], filename_prefix: 'transformed' } },
    },
  },
  {
    id: 'masks',
    title: 'Composite with a mask',
    description: 'Two solid images, a feathered mask, composited and previewed.',
    prompt: {
      1: { class_type: 'EmptyImage', inputs: { width: 512, height: 512, batch_size: 1, color: 0xf0c040 } },
      2: { class_type: 'EmptyImage', inputs: { width: 256, height: 256, batch_size: 1, color: 0x2060c0 } },
      3: { class_type: 'SolidMask', inputs: { value: 1, width: 256, height: 256 } },
      4: { class_type: 'FeatherMask', inputs: { mask: ['3', 0], left: 32, top: 32, right: 32, bottom: 32 } },
      5: { class_type: 'ImageCompositeMasked', inputs: { destination: ['1', 0], source: ['2', 0], x: 128, y: 128, resize_source: false, mask: ['4', 0] } },
      6: { class_type: 'PreviewImage', inputs: { images: ['5', 0] } },
    },
  },
  {
    id: 'text',
    title: 'Text utilities',
    description: 'Join two strings, change their case and show the result.',
    prompt: {
      1: { class_type: 'PrimitiveString', inputs: { value: 'hello' } },
      2: { class_type: 'PrimitiveString', inputs: { value: 'workflow' } },
      3: { class_type: 'StringConcatenate', inputs: { string_a: ['1', 0], string_b: ['2', 0], delimiter: ', ' } },
      4: { class_type: 'CaseConverter', inputs: { string: ['3', 0], mode: 'UPPERCASE' } },
      5: { class_type: 'PreviewAny', inputs: { source: ['4', 0] } },
    },
  },
];
