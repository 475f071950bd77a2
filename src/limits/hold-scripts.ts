/**
 * The Redis hold store's Lua scripts (redis-hold-store.ts). Every script works on one account's five keys (KEYS, all with
 * the account's hash tag, so they sit in one Redis Cluster slot):
 *   KEYS[1] s  HASH snapshots: `a` → "seq balHi balLo usageHi usageLo"; `k|HASH|PERIOD` → "seq uHi uLo bHi bLo";
 *              `q|SEQ` → a record waiting for the records before it (its APPLY fields), `q` → their SEQs
 *   KEYS[2] h  HASH holds: `SCOPE|ID` → "hi lo until settling"
 *   KEYS[3] t  HASH totals: `SCOPE` → "hi lo" of the scope's holds; `p` → "costHi costLo count at" of every pending
 *              charge (how many, and when they were last added up from KEYS[4]), `p:HASH|PERIOD` → "costHi costLo
 *              byokHi byokLo" of the key's pending charges that count in PERIOD
 *   KEYS[4] p  HASH pending charges: `ID` → "costHi costLo byokHi byokLo KEYHASH DAY WEEK MONTH until"
 *   KEYS[5] z  ZSET deadlines: `h|SCOPE|ID`, `p|ID` and `q|SEQ`, scored by until (ms)
 * Scopes: `b` the in-flight budget, `r` running holds on the balance, `k:HASH` running holds on a key.
 *
 * Money never passes through a Lua number whole: an amount is split into (hi, lo) = (⌊n / 10⁹⌋,
 * n mod 10⁹), both exact in a double for any balance the ledger allows, and every sum and comparison
 * is done on the pair. ARGV[1] is the time in ms, or '' for Redis's own clock (TIME): one clock for
 * every process.
 */
const COMMON = `
local B = 1000000000
local KS, KH, KT, KP, KZ = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local function fmt(x) return string.format('%.0f', x) end
local function norm(hi, lo)
  local c = math.floor(lo / B)
  return hi + c, lo - c * B
end
local function add(ah, al, bh, bl) return norm(ah + bh, al + bl) end
local function sub(ah, al, bh, bl) return norm(ah - bh, al - bl) end
local function lt(ah, al, bh, bl) return ah < bh or (ah == bh and al < bl) end
local function split(s)
  local t = {}
  for w in string.gmatch(s, '%S+') do t[#t + 1] = w end
  return t
end
-- The fields of a stored value whose shape is known: one match, no table (a third of split's cost).
local match = string.match
local function two(s) return match(s, '^(%S+) (%S+)') end
local function four(s) return match(s, '^(%S+) (%S+) (%S+) (%S+)') end
local function five(s) return match(s, '^(%S+) (%S+) (%S+) (%S+) (%S+)') end
-- A pending charge's nine fields (see KEYS[4]), as a table.
local function entry(s) return { match(s, '^(%S+) (%S+) (%S+) (%S+) (%S*) (%S+) (%S+) (%S+) (%S+)') } end
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = tonumber(ARGV[1])
end
local nowText = fmt(now)
-- A redis.call costs more than the work it does, and one call's operations touch the same fields
-- again and again (each admission and settlement moves the same totals): the holds, their totals and
-- their deadlines are read once, kept here, and written once, by flush() at the end of the script.
-- The pending charges and snapshots are read once and kept until they change.
local holds, holds_dirty = {}, {}
local totals, totals_dirty = {}, {}
local deadlines = {}
-- A field of a hash, read once and then from cache (false: the field is absent).
local function cached(cache, key, field)
  local v = cache[field]
  if v == nil then
    v = redis.call('HGET', key, field)
    cache[field] = v
  end
  return v
end
local function hold_get(f) return cached(holds, KH, f) end
local function hold_set(f, v)
  holds[f] = v
  holds_dirty[f] = true
end
local function total(scope)
  local t = totals[scope]
  if t == nil then
    local v = redis.call('HGET', KT, scope)
    if v then
      local hi, lo = two(v)
      t = { tonumber(hi), tonumber(lo) }
    else
      t = { 0, 0 }
    end
    totals[scope] = t
  end
  return t[1], t[2]
end
local function set_total(scope, hi, lo)
  totals[scope] = { hi, lo }
  totals_dirty[scope] = true
end
local function in_batches(cmd, key, list)
  for i = 1, #list, 500 do redis.call(cmd, key, unpack(list, i, math.min(i + 499, #list))) end
end
-- Writes changed entries back to a key: each name with a value is set (the two items \`items\` gives, in
-- the set command's order), each without one is deleted.
local function write_back(key, changed, set_cmd, del_cmd, items)
  local sets, dels = {}, {}
  for name, value in pairs(changed) do
    if value then
      local a, b = items(name, value)
      sets[#sets + 1] = a
      sets[#sets + 1] = b
    else
      dels[#dels + 1] = name
    end
  end
  in_batches(set_cmd, key, sets)
  in_batches(del_cmd, key, dels)
end
-- The pending charges' sums (KT's \`p\` and \`p:HASH|PERIOD\`), so that an admission reads an account's
-- money and a key's usage in O(1) however many charges are pending: read once, kept here, written by
-- flush(). Each is {costHi, costLo, byokHi, byokLo}; \`p\`'s is {costHi, costLo, count, at}.
local psums, psums_dirty = {}, {}
local function psum(field)
  local s = psums[field]
  if s == nil then
    s = { 0, 0, 0, 0 }
    local v = redis.call('HGET', KT, field)
    if v then
      s[1], s[2], s[3], s[4] = four(v)
      for i = 1, 4 do s[i] = tonumber(s[i]) or 0 end
    end
    psums[field] = s
  end
  return s
end
local function field_value(f, v) return f, v end
local function flush()
  local hold_changes, total_changes = {}, {}
  for f in pairs(holds_dirty) do hold_changes[f] = holds[f] end
  for scope in pairs(totals_dirty) do
    local t = totals[scope]
    total_changes[scope] = not (t[1] == 0 and t[2] == 0) and (fmt(t[1]) .. ' ' .. fmt(t[2]))
  end
  for f in pairs(psums_dirty) do
    local s = psums[f]
    -- A key's sum goes at zero; \`p\` stays (its count and time say when the sums were added up).
    local zero = s[1] == 0 and s[2] == 0 and s[3] == 0 and s[4] == 0
    total_changes[f] = (f == 'p' or not zero) and (fmt(s[1]) .. ' ' .. fmt(s[2]) .. ' ' .. fmt(s[3]) .. ' ' .. fmt(s[4]))
  end
  write_back(KH, hold_changes, 'HSET', 'HDEL', field_value)
  write_back(KT, total_changes, 'HSET', 'HDEL', field_value)
  write_back(KZ, deadlines, 'ZADD', 'ZREM', function(m, score) return score, m end)
  holds_dirty, totals_dirty, psums_dirty, deadlines = {}, {}, {}, {}
end
-- Adds (sign 1) or takes away (sign -1) a pending charge, given as its entry's fields, to or from the sums.
local function pend_change(t, sign)
  local ch, cl, yh, yl = sign * tonumber(t[1]), sign * tonumber(t[2]), sign * tonumber(t[3]), sign * tonumber(t[4])
  local s = psum('p')
  s[1], s[2] = add(s[1], s[2], ch, cl)
  s[3] = s[3] + sign
  psums_dirty['p'] = true
  for _, period in ipairs({ 'all', t[6], t[7], t[8] }) do
    local f = 'p:' .. t[5] .. '|' .. period
    local k = psum(f)
    k[1], k[2] = add(k[1], k[2], ch, cl)
    k[3], k[4] = add(k[3], k[4], yh, yl)
    psums_dirty[f] = true
  end
end
-- Makes sure the sums are right before anything reads or moves them, once a call: they are added up
-- again from KP when they are missing, when they count another number of charges than KP holds (KP
-- lost while KT was not, a call that failed part-way), and at least every RESUM_MS whatever they say
-- (a gateway of an older version, running beside this one during an upgrade, changes KP without
-- them): a drift lasts no longer than that. Adding up costs O(pending charges), once in RESUM_MS.
local RESUM_MS = 1000
local psums_ready = false
local function pending_sums()
  if psums_ready then return end
  psums_ready = true
  local s = psum('p') -- all zero when missing: added up then
  if now - s[4] < RESUM_MS and now >= s[4] and s[3] == redis.call('HLEN', KP) then return end
  for _, f in ipairs(redis.call('HKEYS', KT)) do
    if string.sub(f, 1, 2) == 'p:' then
      psums[f] = { 0, 0, 0, 0 }
      psums_dirty[f] = true
    end
  end
  psums['p'] = { 0, 0, 0, now }
  psums_dirty['p'] = true
  local raw = redis.call('HGETALL', KP)
  for i = 2, #raw, 2 do pend_change(entry(raw[i]), 1) end
end
-- Drops the pending charge of \`id\`, if any, and its part of the sums.
local function pend_drop(id)
  pending_sums()
  local v = redis.call('HGET', KP, id)
  if v then
    pend_change(entry(v), -1)
    redis.call('HDEL', KP, id)
  end
end
-- Puts the pending charge of \`id\`: its entry's nine fields (see KEYS[4]), and its deadline.
local function pend_put(id, t)
  pend_drop(id)
  redis.call('HSET', KP, id, table.concat(t, ' '))
  pend_change(t, 1)
  deadlines['p|' .. id] = tonumber(t[9])
end
local function drop_hold(scope, id)
  local f = scope .. '|' .. id
  local v = hold_get(f)
  if not v then return false end
  local hi, lo = two(v)
  local th, tl = total(scope)
  set_total(scope, sub(th, tl, tonumber(hi), tonumber(lo)))
  hold_set(f, false)
  deadlines['h|' .. f] = false
  return true
end
-- A hold of (hi, lo), given as the decimal strings it is stored as (an argument's, or a stored
-- hold's), until \`untilMs\` (\`untilText\`: fmt(untilMs), made once for a request's holds).
local function put_hold(scope, id, hi, lo, untilMs, untilText, settling)
  drop_hold(scope, id)
  local f = scope .. '|' .. id
  hold_set(f, hi .. ' ' .. lo .. ' ' .. untilText .. ' ' .. settling)
  deadlines['h|' .. f] = untilMs
  local th, tl = total(scope)
  set_total(scope, add(th, tl, tonumber(hi), tonumber(lo)))
end
-- Every hold of a scope (a refusal lists them), in Redis's order: what this script wrote goes first.
local function scope_holds(prefix)
  flush()
  local out = {}
  local raw = redis.call('HGETALL', KH)
  for i = 1, #raw, 2 do
    if string.sub(raw[i], 1, #prefix) == prefix then out[#out + 1] = raw[i + 1] end
  end
  return out
end
local snapshots = {}
local function snapshot(field) return cached(snapshots, KS, field) end
local function newer(field, value)
  local old = snapshot(field)
  if old and tonumber(match(old, '^%S+')) >= tonumber(match(value, '^%S+')) then return end
  redis.call('HSET', KS, field, value)
  snapshots[field] = value
end
-- Applies the record of a ledger commit whose fields are F[a], F[a + 1], … (see APPLY's 'R'): each
-- snapshot when newer, and the pending charges the commit recorded dropped. Answers the index after it.
local function apply_record(F, a)
  if F[a] ~= '' then newer('a', F[a]) end
  local n = tonumber(F[a + 1])
  for i = 0, n - 1 do newer('k|' .. F[a + 2 + 2 * i], F[a + 3 + 2 * i]) end
  local at = a + 2 + 2 * n
  local m = tonumber(F[at])
  if m > 0 then pending_sums() end
  for i = at + 1, at + m, 500 do
    local j = math.min(i + 499, at + m)
    local entries = redis.call('HMGET', KP, unpack(F, i, j))
    local seen = {}
    for e = 1, j - i + 1 do
      local id = F[i + e - 1]
      if entries[e] and not seen[id] then pend_change(entry(entries[e]), -1) end
      seen[id] = true
    end
    redis.call('HDEL', KP, unpack(F, i, j))
  end
  for i = at + 1, at + m do deadlines['p|' .. F[i]] = false end
  return at + m + 1
end
-- Records come from every process, each as soon as its commit returns, so they can land out of the
-- order of the account's commits (its sequence number moves by one at each). Applied early, a later
-- commit's snapshot, which already counts an earlier commit's charges, would be read beside them still
-- pending: counted twice until the earlier record lands. So a record that skips a sequence number
-- waits (\`q|SEQ\` in KS, \`q\` listing them), its charges still pending and the snapshot before it in
-- force (exact: the snapshot and every charge after it), until the records before it land, or for
-- GAP_MS at most (one that never comes: a process that died between its commit and its record, a
-- transaction that moved the account without one): half a second, so that a credit entry recorded
-- behind such a gap still reaches every process within the second CONTRACT §8 allows (a record
-- whose write failed is written again at the process's next sync, within a second: its gap may be
-- closed by force first, over-counting until it lands). A key's first snapshot is written at once (an
-- admission waits on it), so is a record without the account's.
local GAP_MS = 500
local function seq_of(v) return tonumber(match(v, '^%S+')) end
local function queued()
  local v = snapshot('q')
  local list = {}
  if v then for w in string.gmatch(v, '%S+') do list[#list + 1] = tonumber(w) end end
  return list
end
local function set_queued(list)
  if #list == 0 then
    if snapshot('q') then redis.call('HDEL', KS, 'q') end
    snapshots['q'] = false
  else
    local v = table.concat(list, ' ')
    redis.call('HSET', KS, 'q', v)
    snapshots['q'] = v
  end
end
-- Applies the waiting records that now follow the snapshot, and every one up to seq \`upto\` whatever
-- it follows, in the order of their sequence numbers.
local function drain(upto)
  local list = queued()
  if #list == 0 then return end
  table.sort(list)
  local kept = {}
  for _, t in ipairs(list) do
    local a = snapshot('a')
    if t <= upto or not a or t <= seq_of(a) + 1 then
      local f = 'q|' .. fmt(t)
      local raw = snapshot(f)
      if raw then
        local F = {}
        for field in string.gmatch(raw, '([^\\t]*)\\t') do F[#F + 1] = field end
        apply_record(F, 1)
        redis.call('HDEL', KS, f)
        snapshots[f] = false
      end
      deadlines[f] = false
    else
      kept[#kept + 1] = t
    end
  end
  set_queued(kept)
end
-- A record, fields F[a], …: applied, or kept waiting for the records before it. Answers the index after it.
local function record_in_order(F, a)
  local n = tonumber(F[a + 1])
  local at = a + 2 + 2 * n
  local after = at + tonumber(F[at]) + 1
  local cur = F[a] ~= '' and snapshot('a')
  local t = cur and seq_of(F[a])
  if cur and t > seq_of(cur) + 1 then
    for i = 0, n - 1 do
      local f = 'k|' .. F[a + 2 + 2 * i]
      if not snapshot(f) then newer(f, F[a + 3 + 2 * i]) end
    end
    local f = 'q|' .. fmt(t)
    local waiting = snapshot(f)
    if waiting then
      -- A record of the same commit waits already (another process's reading of the ledger at that
      -- number, or the commit's own record): they are one, so the charges each recorded and the key
      -- snapshots each carries wait together (dropping this one would leave its charges pending
      -- beside a snapshot that counts them).
      local E = {}
      for field in string.gmatch(waiting, '([^\\t]*)\\t') do E[#E + 1] = field end
      local en = tonumber(E[2])
      local eat = 3 + 2 * en
      local em = tonumber(E[eat])
      local M = { E[1], tostring(en + n) }
      for i = 3, eat - 1 do M[#M + 1] = E[i] end
      for i = a + 2, at - 1 do M[#M + 1] = F[i] end
      M[#M + 1] = tostring(em + tonumber(F[at]))
      for i = eat + 1, eat + em do M[#M + 1] = E[i] end
      for i = at + 1, after - 1 do M[#M + 1] = F[i] end
      local raw = table.concat(M, '\\t') .. '\\t'
      redis.call('HSET', KS, f, raw)
      snapshots[f] = raw
    else
      local raw = table.concat(F, '\\t', a, after - 1) .. '\\t'
      redis.call('HSET', KS, f, raw)
      snapshots[f] = raw
      local list = queued()
      list[#list + 1] = t
      set_queued(list)
      deadlines[f] = now + GAP_MS
    end
    return after
  end
  apply_record(F, a)
  drain(-1)
  return after
end
-- Drops what lapsed by now; a lapsed pending charge drops the snapshots (reload from the ledger), the
-- waiting records first (their charges are in the ledger the snapshots are reloaded from); a record
-- that waited GAP_MS is applied, with those before it.
local function purge()
  local gone = redis.call('ZRANGEBYSCORE', KZ, '-inf', now)
  for _, m in ipairs(gone) do
    local kind = string.sub(m, 1, 2)
    if kind == 'p|' then
      pend_drop(string.sub(m, 3))
      drain(math.huge)
      redis.call('DEL', KS)
      snapshots = {}
      deadlines[m] = false
    elseif kind == 'q|' then
      drain(tonumber(string.sub(m, 3)))
      deadlines[m] = false
    else
      local f = string.sub(m, 3)
      local bar = string.find(f, '|', 1, true)
      drop_hold(string.sub(f, 1, bar - 1), string.sub(f, bar + 1))
      deadlines[m] = false
    end
  end
end
-- The account's balance and total usage: snapshot less pending; nil without a snapshot.
local function money()
  local a = snapshot('a')
  if not a then return nil end
  local _, bh, bl, uh, ul = five(a)
  pending_sums()
  local s = psum('p')
  bh, bl = sub(tonumber(bh), tonumber(bl), s[1], s[2])
  uh, ul = add(tonumber(uh), tonumber(ul), s[1], s[2])
  return bh, bl, uh, ul
end
-- A key's usage and BYOK usage in a period: snapshot plus pending; nil without a snapshot of it.
local function key_usage(hash, period)
  local v = snapshot('k|' .. hash .. '|' .. period)
  if not v then return nil end
  local _, uh, ul, bh, bl = five(v)
  pending_sums()
  local s = psum('p:' .. hash .. '|' .. period)
  uh, ul = add(tonumber(uh), tonumber(ul), s[1], s[2])
  bh, bl = add(tonumber(bh), tonumber(bl), s[3], s[4])
  return uh, ul, bh, bl
end
local function touch()
  for i = 1, 5 do redis.call('PEXPIRE', KEYS[i], 86400000) end
end
`;

/**
 * Everything this process does to one account's holds in one event-loop turn, in one call, applied in
 * order (see turn-batches.ts). ARGV: now, then the operations, one argument each: a code and its
 * fields, each ended by a tab (redis-hold-store.ts, opArgument):
 *   'A' id leaseMs refuseNegative(0/1)
 *       keyHash('' for none) keyPeriod includeByok(0/1) limitHi limitLo amountHi amountLo
 *       balance('' for none, else 1) amountHi amountLo
 *       budget('' for none, else 1) amountHi amountLo thresholdHi thresholdLo fractionPpm ceilingHi ceilingLo:
 *       admit a request: refuse (naming the first limit in the contract's order) or take every hold it
 *       asks for. Its answer is one string, these fields separated by tabs: {'ok', now, balHi, balLo, budget hold taken 0/1} |
 *       {'snapshot', account 0/1, key 0/1} | {'negative', balHi, balLo} | {'key', usedHi, usedLo, heldHi,
 *       heldLo} | {'balance', balHi, balLo, heldHi, heldLo} | {'weight', budgetHi, budgetLo} | {'budget',
 *       budgetHi, budgetLo, heldHi, heldLo, now, then per hold: hi, lo, until, settling};
 *   'S' id costHi costLo byokHi byokLo keyHash day week month windowMs leaseMs: settle the request: its
 *       budget hold becomes the actual cost for the window, its running holds a pending charge;
 *   'N' id keyHash leaseMs: renew the request's running holds and pending charge;
 *   'R' account n (field value)×n m id×m: record a ledger commit, where account is '' or "seq balHi balLo
 *       usageHi usageLo", each (field, value) is ("HASH|PERIOD", "seq uHi uLo bHi bLo") and the ids are
 *       the generations it recorded. Each snapshot is written only when newer; a record that skips one of
 *       the account's sequence numbers waits for the records before it (record_in_order).
 * Answers {now, then one answer per operation: an admission's, or 1}.
 */
export const APPLY = `${COMMON}
-- Each operation is one argument, its fields each ended by a tab (an argument a field cost the
-- gateway one RESP element each to write and Redis one to read): ARG is ARGV with them split back, so
-- that every field keeps its place.
local ARG = { ARGV[1] }
for i = 2, #ARGV do
  -- An argument in any other form (one a field, as before) is refused whole rather than read as nothing.
  if string.byte(ARGV[i], -1) ~= 9 then return redis.error_reply('APPLY: operation ' .. (i - 1) .. ' does not end with a tab') end
  for field in string.gmatch(ARGV[i], '([^\\t]*)\\t') do ARG[#ARG + 1] = field end
end
purge()
-- An admission's answer is one string, its fields separated by tabs: one RESP element for the
-- gateway to read, where a field each cost it one each (its reader's cost goes by elements).
local function fields(t) return table.concat(t, '\\t') end
local function admit(a)
  local id, lease = ARG[a], tonumber(ARG[a + 1])
  local bh, bl = money()
  local keyHash, keyPeriod = ARG[a + 3], ARG[a + 4]
  local kuh, kul, kbh, kbl
  if keyHash ~= '' then kuh, kul, kbh, kbl = key_usage(keyHash, keyPeriod) end
  if bh == nil or (keyHash ~= '' and kuh == nil) then
    return fields({ 'snapshot', bh == nil and '1' or '0', (keyHash ~= '' and kuh == nil) and '1' or '0' })
  end
  if ARG[a + 2] == '1' and bh < 0 then return fields({ 'negative', fmt(bh), fmt(bl) }) end
  if keyHash ~= '' then
    local uh, ul = kuh, kul
    if ARG[a + 5] == '1' then uh, ul = add(uh, ul, kbh, kbl) end
    local hh, hl = total('k:' .. keyHash)
    local nh, nl = add(uh, ul, hh, hl)
    nh, nl = add(nh, nl, tonumber(ARG[a + 8]), tonumber(ARG[a + 9]))
    if lt(tonumber(ARG[a + 6]), tonumber(ARG[a + 7]), nh, nl) then return fields({ 'key', fmt(uh), fmt(ul), fmt(hh), fmt(hl) }) end
  end
  if ARG[a + 10] ~= '' then
    local hh, hl = total('r')
    local nh, nl = add(hh, hl, tonumber(ARG[a + 11]), tonumber(ARG[a + 12]))
    local ah, al = bh, bl
    if ah < 0 then ah, al = 0, 0 end
    if lt(ah, al, nh, nl) then return fields({ 'balance', fmt(bh), fmt(bl), fmt(hh), fmt(hl) }) end
  end
  local budgetHi, budgetLo
  if ARG[a + 13] ~= '' and lt(bh, bl, tonumber(ARG[a + 16]), tonumber(ARG[a + 17])) then
    if bh < 0 or (bh == 0 and bl == 0) then
      budgetHi, budgetLo = 0, 0
    else
      local ppm = tonumber(ARG[a + 18])
      local whole = bh * ppm
      local sh = math.floor(whole / 1000000)
      budgetHi, budgetLo = norm(sh, (whole - sh * 1000000) * 1000 + math.floor(bl * ppm / 1000000))
      local ch, cl = tonumber(ARG[a + 19]), tonumber(ARG[a + 20])
      if lt(ch, cl, budgetHi, budgetLo) then budgetHi, budgetLo = ch, cl end
    end
    local ah, al = tonumber(ARG[a + 14]), tonumber(ARG[a + 15])
    if lt(budgetHi, budgetLo, ah, al) then return fields({ 'weight', fmt(budgetHi), fmt(budgetLo) }) end
    local hh, hl = total('b')
    local nh, nl = add(hh, hl, ah, al)
    if lt(budgetHi, budgetLo, nh, nl) then
      local out = { 'budget', fmt(budgetHi), fmt(budgetLo), fmt(hh), fmt(hl), nowText }
      for _, v in ipairs(scope_holds('b|')) do
        local t = split(v)
        out[#out + 1] = t[1]; out[#out + 1] = t[2]; out[#out + 1] = t[3]; out[#out + 1] = t[4]
      end
      return fields(out)
    end
  end
  local untilMs = now + lease
  local untilText = fmt(untilMs)
  if keyHash ~= '' then put_hold('k:' .. keyHash, id, ARG[a + 8], ARG[a + 9], untilMs, untilText, '0') end
  if ARG[a + 10] ~= '' then put_hold('r', id, ARG[a + 11], ARG[a + 12], untilMs, untilText, '0') end
  if budgetHi ~= nil then put_hold('b', id, ARG[a + 14], ARG[a + 15], untilMs, untilText, '0') end
  return fields({ 'ok', nowText, fmt(bh), fmt(bl), budgetHi ~= nil and '1' or '0' })
end
local function settle(a)
  local id, keyHash = ARG[a], ARG[a + 5]
  local ch, cl, yh, yl = tonumber(ARG[a + 1]), tonumber(ARG[a + 2]), tonumber(ARG[a + 3]), tonumber(ARG[a + 4])
  local costly = ch > 0 or cl > 0
  if drop_hold('b', id) and costly then
    local untilMs = now + tonumber(ARG[a + 9])
    put_hold('b', id, ARG[a + 1], ARG[a + 2], untilMs, fmt(untilMs), '1')
  end
  drop_hold('r', id)
  drop_hold('k:' .. keyHash, id)
  if costly or yh > 0 or yl > 0 then
    pend_put(id, { ARG[a + 1], ARG[a + 2], ARG[a + 3], ARG[a + 4], keyHash, ARG[a + 6], ARG[a + 7], ARG[a + 8], fmt(now + tonumber(ARG[a + 10])) })
  end
  return a + 11
end
local function renew(a)
  local id = ARG[a]
  local untilMs = now + tonumber(ARG[a + 2])
  for _, scope in ipairs({ 'b', 'r', 'k:' .. ARG[a + 1] }) do
    local v = hold_get(scope .. '|' .. id)
    if v then
      local hi, lo, was, settling = four(v)
      if settling == '0' and tonumber(was) < untilMs then put_hold(scope, id, hi, lo, untilMs, fmt(untilMs), '0') end
    end
  end
  local p = redis.call('HGET', KP, id)
  if p then
    local t = entry(p)
    if tonumber(t[9]) < untilMs then
      t[9] = fmt(untilMs)
      redis.call('HSET', KP, id, table.concat(t, ' '))
      deadlines['p|' .. id] = untilMs
    end
  end
  return a + 3
end
local answers = { nowText }
local i = 2
while i <= #ARG do
  local op = ARG[i]
  if op == 'A' then
    answers[#answers + 1] = admit(i + 1)
    i = i + 22
  else
    if op == 'S' then i = settle(i + 1)
    elseif op == 'N' then i = renew(i + 1)
    elseif op == 'R' then i = record_in_order(ARG, i + 1)
    else
      flush()
      return redis.error_reply('unknown operation ' .. tostring(op))
    end
    answers[#answers + 1] = 1
  end
end
flush()
touch()
return answers
`;

/**
 * ARGV: now, keyHash ('' for none), then periods. Answers {'none'} without an account snapshot, else
 * {balHi, balLo, usageHi, usageLo, budgetHeldHi, budgetHeldLo, runningHeldHi, runningHeldLo, then per period: uHi, uLo, bHi, bLo or
 * 'missing' four times}.
 */
export const VIEW = `${COMMON}
purge()
local bh, bl, uh, ul = money()
if bh == nil then
  flush()
  return { 'none' }
end
local hh, hl = total('b')
local rh, rl = total('r')
local out = { fmt(bh), fmt(bl), fmt(uh), fmt(ul), fmt(hh), fmt(hl), fmt(rh), fmt(rl) }
for i = 3, #ARGV do
  local kuh, kul, kbh, kbl = key_usage(ARGV[2], ARGV[i])
  if kuh == nil then
    for _ = 1, 4 do out[#out + 1] = 'missing' end
  else
    out[#out + 1] = fmt(kuh); out[#out + 1] = fmt(kul); out[#out + 1] = fmt(kbh); out[#out + 1] = fmt(kbl)
  end
end
flush()
touch() -- what this read wrote (the sums added up again) expires with the account's other keys
return out
`;

/**
 * ARGV: now, id, keyHash, budget hold, balance hold, key hold (each '' or "hi lo until settling"),
 * pending ('' or "costHi costLo byokHi byokLo DAY WEEK MONTH until"). Puts the request's state as its
 * process knows it (after Redis lost it, or after a write that may not have landed); idempotent.
 */
export const PUT = `${COMMON}
purge()
local id, keyHash = ARGV[2], ARGV[3]
local scopes = { 'b', 'r', 'k:' .. keyHash }
for i = 1, 3 do
  drop_hold(scopes[i], id)
  local v = ARGV[3 + i]
  if v ~= '' then
    local t = split(v)
    if tonumber(t[3]) > now then put_hold(scopes[i], id, t[1], t[2], tonumber(t[3]), fmt(tonumber(t[3])), t[4]) end
  end
end
pend_drop(id)
deadlines['p|' .. id] = false
if ARGV[7] ~= '' then
  local t = split(ARGV[7])
  if tonumber(t[8]) > now then pend_put(id, { t[1], t[2], t[3], t[4], keyHash, t[5], t[6], t[7], t[8] }) end
end
flush()
touch()
return nowText
`;
