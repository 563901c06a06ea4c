/**
 * What a control (ControlNet, T2I adapter, several stacked) gives the UNet at
 * one model call, in the reference's terms: lists the UNet pops from the end
 * (`input` after each input block, `middle` after the middle block, `output`
 * onto each skip the output side takes). A null entry adds nothing.
 */
import type { DiscreteSchedule } from './schedules.ts';

export interface ResidualTensor {
  shape: number[];
  data: Float32Array;
}

export interface ControlResiduals {
  input: (ResidualTensor | null)[];
  middle: (ResidualTensor | null)[];
  output: (ResidualTensor | null)[];
}

/** One model call as a control sees it (the reference's get_control arguments). */
export interface ControlCall {
  /** The UNet's input, already scaled for σ (calculate_input). */
  x: Float32Array;
  shape: readonly number[];
  sigma: number;
  /** The model's timestep for σ. */
  timestep: number;
  /** [N, T, D] text embedding of the batch, and SDXL's adm rows [N, adm]. */
  context: ResidualTensor;
  y?: Float32Array;
  /** How many conditioning entries the batch holds (the reference's batched_number). */
  batched: number;
  /** The model's σ schedule, for the start and end percents. */
  schedule: DiscreteSchedule;
  /**
   * The sampled model's checkpoint (sd1.ts's `Checkpoint`, its LoRA patches included): a Control-LoRA's ControlNet is
   * built from its UNet. Opaque here, so that this module does not depend on the one that samples.
   */
  model?: unknown;
}

export interface ControlSource {
  residuals(call: ControlCall): Promise<ControlResiduals | null>;
}
