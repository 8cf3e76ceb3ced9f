import net from 'node:net';

/**
 * A TCP relay in front of a real PostgreSQL, so a test can take "the database" away from a
 * running app (cut every connection and refuse new ones) without stopping the shared server, or
 * hold back what one connection receives (a late notification).
 */
export async function startTcpProxy(target: { host: string; port: number }) {
  const sockets = new Set<net.Socket>();
  /** Each connection's startup message (it names the application) and, while held, what the server sent it. */
  const links = new Set<{ startup: string; client: net.Socket; queued: Buffer[] | null }>();
  let down = false;
  const server = net.createServer((client) => {
    if (down) return client.destroy();
    const upstream = net.connect(target.port, target.host);
    const link = { startup: '', client, queued: null as Buffer[] | null };
    links.add(link);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => {
        sockets.delete(s);
        links.delete(link);
      });
      s.on('error', () => {});
    }
    client.once('data', (chunk: Buffer) => void (link.startup = chunk.toString('latin1')));
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => void (link.queued ? link.queued.push(chunk) : client.write(chunk)));
    upstream.on('end', () => client.end());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    /** Drops every open connection and refuses new ones. */
    stop() {
      down = true;
      for (const s of sockets) s.destroy();
    },
    /** Accepts connections again. */
    start() {
      down = false;
    },
    /**
     * Holds back what the server sends to the open connections of `applicationName` until the
     * returned function is called, which delivers it all in order.
     */
    hold(applicationName: string): () => void {
      const held = [...links].filter((l) => l.startup.includes(`application_name\0${applicationName}\0`));
      if (held.length === 0) throw new Error(`no open connection of ${applicationName}`);
      for (const l of held) l.queued ??= [];
      return () => {
        for (const l of held) {
          const queued = l.queued ?? [];
          l.queued = null;
          for (const chunk of queued) l.client.write(chunk);
        }
      };
    },
    close: () => new Promise<void>((r) => { down = true; for (const s of sockets) s.destroy(); server.close(() => r()); }),
  };
}
