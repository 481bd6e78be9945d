@_exported import Clocks
