// Undo and redo as the reference frontend does them: the graph's serialized
// state is compared after every user action (pointer up, key up, a command)
// and a changed state is pushed; undo loads the previous state.

const LIMIT = 50;

export class History {
  constructor(graph, load, onChange = () => {}) {
    this.graph = graph;
    this.load = load;
    this.onChange = onChange;
    this.undos = [];
    this.redos = [];
    this.current = this.snapshot();
    this.paused = false;
  }

  snapshot() {
    const data = this.graph.serialize();
    // The view is not part of what is undone.
    if (data.extra) delete data.extra.ds;
    return JSON.stringify(data);
  }

  /** Records the state if it changed; answers whether it did. */
  check() {
    if (this.paused) return false;
    const s = this.snapshot();
    if (s === this.current) return false;
    this.undos.push(this.current);
    if (this.undos.length > LIMIT) this.undos.shift();
    this.redos = [];
    this.current = s;
    this.onChange();
    return true;
  }

  reset() {
    this.undos = [];
    this.redos = [];
    this.current = this.snapshot();
  }

  #go(from, to) {
    this.check();
    if (!from.length) return false;
    to.push(this.current);
    this.current = from.pop();
    this.paused = true;
    try {
      this.load(JSON.parse(this.current));
    } finally {
      this.paused = false;
    }
    this.onChange();
    return true;
  }

  undo() {
    return this.#go(this.undos, this.redos);
  }

  redo() {
    return this.#go(this.redos, this.undos);
  }
}
