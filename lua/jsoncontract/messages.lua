--- Alias kept for callers of the old name: the end user's wording lives in `jsoncontract.feedback`.
-- @module jsoncontract.messages
return require "jsoncontract.feedback"
