--- Alias kept for callers of the old name: the adapters live in `jsoncontract.contract.adapters`.
-- @module jsoncontract.adapters
return require "jsoncontract.contract.adapters"
