/**
 * What every model-file reader shares (safetensors.ts, torch-zip.ts): the
 * tensor dtypes and their sizes, a tensor's place in its file, and the error
 * a file that cannot be read as asked raises.
 */
import path from 'node:path';

export const DTYPE_SIZE = { F64: 8, F32: 4, F16: 2, BF16: 2, I64: 8, I32: 4, I16: 2, I8: 1, U8: 1, BOOL: 1 } as const;
export type Dtype = keyof typeof DTYPE_SIZE;

export interface TensorInfo {
  readonly name: string;
  readonly dtype: Dtype;
  readonly shape: readonly number[];
  /** Byte range relative to the start of the data area. */
  readonly begin: number;
  readonly end: number;
}

/** A file that is not a valid safetensors file, or a tensor that cannot be read as asked. */
export class ModelFileError extends Error {
  constructor(
    readonly file: string,
    problem: string,
  ) {
    super(`${path.basename(file)}: ${problem}`);
    this.name = 'ModelFileError';
  }
}
