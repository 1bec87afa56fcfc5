local s = require("stoat")
local b = s.builder()

b:stream("in"):to("out", {
  partitioner = function(_, _, _, headers)
    if headers.h == "0" then return {} end
    return nil
  end,
})

return b
