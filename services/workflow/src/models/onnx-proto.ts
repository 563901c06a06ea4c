/**
 * Writes an ONNX ModelProto in protobuf wire format, with no dependency. Only
 * the fields the graph builders use are known here (field numbers from
 * onnx/onnx.proto3). Weights are external data: each initializer names a file
 * and a byte range, so the protobuf stays small whatever the model's size.
 */

export const DataType = { FLOAT: 1, UINT8: 2, INT8: 3, INT32: 6, INT64: 7, BOOL: 9, FLOAT16: 10, DOUBLE: 11, BFLOAT16: 16, FLOAT8E4M3FN: 17, FLOAT8E5M2: 19 } as const;

export type AttrValue = number | string | number[] | { ints: number[] } | { floats: number[] } | { float: number } | { tensor: TensorValue };

export interface NodeSpec {
  op: string;
  inputs: string[];
  outputs: string[];
  name?: string;
  domain?: string;
  attrs?: Record<string, AttrValue>;
}

export interface ExternalRef {
  location: string;
  offset: number;
  length: number;
}

/** An initializer: inline values (small constants) or a range of an external file. */
export interface TensorValue {
  name: string;
  dataType: number;
  dims: readonly number[];
  raw?: Uint8Array;
  external?: ExternalRef;
}

export interface ValueInfo {
  name: string;
  elemType: number;
  /** A number is a fixed size, a string a symbolic one. */
  dims: (number | string)[];
}

export interface GraphSpec {
  name: string;
  nodes: NodeSpec[];
  initializers: TensorValue[];
  inputs: ValueInfo[];
  outputs: ValueInfo[];
}

class Writer {
  private chunks: Uint8Array[] = [];
  private size = 0;

  private push(b: Uint8Array): void {
    this.chunks.push(b);
    this.size += b.length;
  }

  varint(v: number | bigint): void {
    let x = BigInt.asUintN(64, BigInt(v));
    const out: number[] = [];
    while (x >= 0x80n) {
      out.push(Number(x & 0x7fn) | 0x80);
      x >>= 7n;
    }
    out.push(Number(x));
    this.push(Uint8Array.from(out));
  }

  tag(field: number, wire: number): void {
    this.varint((field << 3) | wire);
  }

  int(field: number, v: number): void {
    this.tag(field, 0);
    this.varint(v);
  }

  bytes(field: number, b: Uint8Array): void {
    this.tag(field, 2);
    this.varint(b.length);
    this.push(b);
  }

  string(field: number, s: string): void {
    this.bytes(field, Buffer.from(s, 'utf8'));
  }

  message(field: number, fill: (w: Writer) => void): void {
    const w = new Writer();
    fill(w);
    this.bytes(field, w.finish());
  }

  float(field: number, v: number): void {
    this.tag(field, 5);
    const b = Buffer.alloc(4);
    b.writeFloatLE(v);
    this.push(b);
  }

  packedInts(field: number, vs: readonly number[]): void {
    const w = new Writer();
    for (const v of vs) w.varint(v);
    this.bytes(field, w.finish());
  }

  packedFloats(field: number, vs: readonly number[]): void {
    const b = Buffer.alloc(vs.length * 4);
    vs.forEach((v, i) => b.writeFloatLE(v, i * 4));
    this.bytes(field, b);
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.size);
    let o = 0;
    for (const c of this.chunks) {
      out.set(c, o);
      o += c.length;
    }
    return out;
  }
}

function writeTensor(w: Writer, t: TensorValue): void {
  w.packedInts(1, t.dims);
  w.int(2, t.dataType);
  w.string(8, t.name);
  if (t.raw) w.bytes(9, t.raw);
  if (t.external) {
    const ext = t.external;
    for (const [k, v] of [
      ['location', ext.location],
      ['offset', String(ext.offset)],
      ['length', String(ext.length)],
    ]) {
      w.message(13, (e) => {
        e.string(1, k!);
        e.string(2, v!);
      });
    }
    w.int(14, 1); // data_location = EXTERNAL
  }
}

// AttributeProto.AttributeType
const AT = { FLOAT: 1, INT: 2, STRING: 3, TENSOR: 4, FLOATS: 6, INTS: 7 };

function writeAttr(w: Writer, name: string, v: AttrValue): void {
  w.string(1, name);
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) throw new Error(`attribute ${name}: use {float} for non-integers`);
    w.int(3, v);
    w.int(20, AT.INT);
  } else if (typeof v === 'string') {
    w.string(4, v);
    w.int(20, AT.STRING);
  } else if (Array.isArray(v)) {
    w.packedInts(8, v);
    w.int(20, AT.INTS);
  } else if ('ints' in v) {
    w.packedInts(8, v.ints);
    w.int(20, AT.INTS);
  } else if ('floats' in v) {
    w.packedFloats(7, v.floats);
    w.int(20, AT.FLOATS);
  } else if ('float' in v) {
    w.float(2, v.float);
    w.int(20, AT.FLOAT);
  } else {
    w.message(5, (t) => writeTensor(t, v.tensor));
    w.int(20, AT.TENSOR);
  }
}

function writeValueInfo(w: Writer, v: ValueInfo): void {
  w.string(1, v.name);
  w.message(2, (type) =>
    type.message(1, (tt) => {
      tt.int(1, v.elemType);
      tt.message(2, (shape) => {
        for (const d of v.dims) shape.message(1, (dim) => (typeof d === 'number' ? dim.int(1, d) : dim.string(2, d)));
      });
    }),
  );
}

/** Serialises a model (IR version 10, default-domain opset 21). */
export function encodeModel(graph: GraphSpec, opset = 21): Uint8Array {
  const w = new Writer();
  w.int(1, 10); // ir_version
  w.string(2, 'svc-workflow');
  w.message(7, (g) => {
    for (const n of graph.nodes) {
      g.message(1, (nw) => {
        for (const i of n.inputs) nw.string(1, i);
        for (const o of n.outputs) nw.string(2, o);
        if (n.name) nw.string(3, n.name);
        nw.string(4, n.op);
        for (const [k, v] of Object.entries(n.attrs ?? {})) nw.message(5, (a) => writeAttr(a, k, v));
        if (n.domain) nw.string(7, n.domain);
      });
    }
    g.string(2, graph.name);
    for (const t of graph.initializers) g.message(5, (tw) => writeTensor(tw, t));
    for (const i of graph.inputs) g.message(11, (vw) => writeValueInfo(vw, i));
    for (const o of graph.outputs) g.message(12, (vw) => writeValueInfo(vw, o));
  });
  w.message(8, (o) => {
    o.string(1, '');
    o.int(2, opset);
  });
  // Contrib operators (fused attention) come from ONNX Runtime's own domain, version 1.
  if (graph.nodes.some((n) => n.domain === 'com.microsoft')) {
    w.message(8, (o) => {
      o.string(1, 'com.microsoft');
      o.int(2, 1);
    });
  }
  return w.finish();
}
