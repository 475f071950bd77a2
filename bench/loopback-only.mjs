// Preloaded (node --import) into Portkey's gateway by bench/overhead.mjs: its server listens with a port
// and no host, which would mean every interface. This makes a listen without a host listen on
// 127.0.0.1 only, so the benchmark never serves beyond the loopback. Nothing else is changed.
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function listenOnLoopback(...args) {
  const [first] = args;
  if (typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first))) {
    if (typeof args[1] !== 'string') {
      if (args.length > 1 && args[1] === undefined) args[1] = '127.0.0.1';
      else args.splice(1, 0, '127.0.0.1');
    }
  } else if (first && typeof first === 'object' && !('path' in first) && !('fd' in first) && !('_handle' in first)) {
    args[0] = { ...first, host: '127.0.0.1' };
  }
  return listen.apply(this, args);
};
