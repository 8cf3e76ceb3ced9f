import net from 'node:net';

/**
 * A TCP relay in front of a real PostgreSQL, so a test can take "the database" away from a
 * running app (cut every connection and refuse new ones) without stopping the shared server.
 */
export async function startTcpProxy(target: { host: string; port: number }) {
  const sockets = new Set<net.Socket>();
  let down = false;
  const server = net.createServer((client) => {
    if (down) return client.destroy();
    const upstream = net.connect(target.port, target.host);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {});
    }
    client.pipe(upstream).pipe(client);
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
    close: () => new Promise<void>((r) => { down = true; for (const s of sockets) s.destroy(); server.close(() => r()); }),
  };
}
