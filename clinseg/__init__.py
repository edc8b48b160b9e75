"clinseg: segmentation-competition evaluation, taught in notebooks."
__version__ = "0.0.1"

# The public API at package level (`from clinseg import encode, dice, ...`): each chapter's module
# lists its public names in `__all__` (written by nbdev_export). Imported in reading order.
from .rle import *
from .dice import *
from .instances import *
from .ap import *
from .ct import *
from .data import *
from .submissions import *
