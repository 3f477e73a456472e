// A REST server of a test's own on 127.0.0.1 (the console's modules talk to
// it as to /rest/ of their origin): routes maps "METHOD path" (path below
// /rest/) to a handler returning {status, type, body} (body a string or a
// value sent as JSON); every request is recorded, body included.
import { createServer } from 'node:http';

export async function restServer(routes) {
  const requests = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => { body += c; });
    req.on('end', () => {
      const path = decodeURIComponent(new URL(req.url, 'http://127.0.0.1').pathname.replace(/^\/rest\//, ''));
      const r = { method: req.method, path, query: new URL(req.url, 'http://127.0.0.1').search, body, type: req.headers['content-type'] || '' };
      requests.push(r);
      const h = routes[`${req.method} ${path}`];
      const out = h ? h(r) : { status: 404, body: `no ${path}\n` };
      const text = typeof out.body === 'string' ? out.body : JSON.stringify(out.body);
      res.writeHead(out.status || 200, { 'Content-Type': out.type || (typeof out.body === 'string' ? 'text/plain' : 'application/json') });
      res.end(text);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}`;
  return { url, requests, close: () => new Promise((resolve) => server.close(resolve)) };
}

// atConsole puts the page at the server's /console/ (the modules read their
// REST root from the page's address when they are imported).
export function atConsole(srv) {
  window.happyDOM.setURL(`${srv.url}/console/`);
}
