-- Keeps the smaller ('min') or the larger ('max') of a hash field's number and `value`; a
-- missing field takes `value`.
local function keepExtreme(key, field, value, rule)
  local cur = redis.call('HGET', key, field)
  if (not cur) or (rule == 'min' and tonumber(value) < tonumber(cur)) or (rule == 'max' and tonumber(value) > tonumber(cur)) then
    redis.call('HSET', key, field, value)
  end
end
