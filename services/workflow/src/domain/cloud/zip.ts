import fs from 'node:fs';
import zlib from 'node:zlib';

/**
 * A ZIP archive writer (PKWARE APPNOTE 6.3): entries stored uncompressed
 * (assets are images and videos that are compressed already), each one's
 * CRC-32 computed in a first read so the local header is complete and every
 * reader (streaming ones included) accepts it. Names are UTF-8 (flag bit
 * 11). No ZIP64: an archive stays below 4 GiB and 65,535 entries.
 */
const LIMIT = 0xffffffff;

function dosTime(d: Date): { time: number; date: number } {
  return {
    time: (d.getHours() << 11) | (d.getMinutes() << 5) | Math.floor(d.getSeconds() / 2),
    date: ((Math.max(1980, d.getFullYear()) - 1980) << 9) | ((d.getMonth() + 1) << 5) | d.getDate(),
  };
}

async function crcOf(file: string): Promise<{ crc: number; size: number }> {
  let crc = 0;
  let size = 0;
  for await (const chunk of fs.createReadStream(file)) {
    crc = zlib.crc32(chunk as Buffer, crc);
    size += (chunk as Buffer).length;
  }
  return { crc, size };
}

export async function writeZip(out: string, entries: Array<{ name: string; file: string }>, onEntry?: (done: number) => void): Promise<number> {
  if (entries.length > 0xffff) throw new Error('An export holds at most 65,535 files');
  const fd = await fs.promises.open(out, 'w');
  const central: Buffer[] = [];
  let offset = 0;
  const write = async (b: Buffer) => {
    await fd.write(b);
    offset += b.length;
  };
  try {
    const { time, date } = dosTime(new Date());
    let i = 0;
    for (const e of entries) {
      const name = Buffer.from(e.name, 'utf8');
      const { crc, size } = await crcOf(e.file);
      if (offset + size + 30 + name.length > LIMIT) throw new Error('The export would be larger than 4 GiB');
      const local = Buffer.alloc(30);
      local.writeUInt32LE(0x04034b50, 0);
      local.writeUInt16LE(20, 4);
      local.writeUInt16LE(0x0800, 6);
      local.writeUInt16LE(0, 8);
      local.writeUInt16LE(time, 10);
      local.writeUInt16LE(date, 12);
      local.writeUInt32LE(crc >>> 0, 14);
      local.writeUInt32LE(size, 18);
      local.writeUInt32LE(size, 22);
      local.writeUInt16LE(name.length, 26);
      local.writeUInt16LE(0, 28);
      const at = offset;
      await write(Buffer.concat([local, name]));
      let written = 0;
      for await (const chunk of fs.createReadStream(e.file, { end: size - 1 < 0 ? undefined : size - 1 })) {
        if (size === 0) break;
        await write(chunk as Buffer);
        written += (chunk as Buffer).length;
      }
      if (written !== size) throw new Error(`${e.name} changed while it was being exported`);
      const c = Buffer.alloc(46);
      c.writeUInt32LE(0x02014b50, 0);
      c.writeUInt16LE(20, 4);
      c.writeUInt16LE(20, 6);
      c.writeUInt16LE(0x0800, 8);
      c.writeUInt16LE(0, 10);
      c.writeUInt16LE(time, 12);
      c.writeUInt16LE(date, 14);
      c.writeUInt32LE(crc >>> 0, 16);
      c.writeUInt32LE(size, 20);
      c.writeUInt32LE(size, 24);
      c.writeUInt16LE(name.length, 28);
      c.writeUInt32LE(at, 42);
      central.push(Buffer.concat([c, name]));
      onEntry?.(++i);
    }
    const cdStart = offset;
    for (const c of central) await write(c);
    const end = Buffer.alloc(22);
    end.writeUInt32LE(0x06054b50, 0);
    end.writeUInt16LE(entries.length, 8);
    end.writeUInt16LE(entries.length, 10);
    end.writeUInt32LE(offset - cdStart, 12);
    end.writeUInt32LE(cdStart, 16);
    await write(end);
    return offset;
  } finally {
    await fd.close();
  }
}
