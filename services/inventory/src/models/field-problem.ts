/** A value a field refuses; its message is the DRF field error. Thrown by validators, caught per field. */
export class FieldProblem extends Error {}

export const fail = (message: string): never => {
  throw new FieldProblem(message);
};
