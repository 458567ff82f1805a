import Strata
import StrataServer

print("strata")
