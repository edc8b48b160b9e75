"clinseg: segmentation-competition evaluation, taught in notebooks."
__version__ = "0.1.0"

# The public API at package level is what a student types (`from clinseg import encode, dice, ...`); everything else
# lives in its chapter's module (`clinseg.runs`, `clinseg.rle`, ..., `clinseg.competitions.dsb2018`). Modules are
# imported in reading order; `clinseg.coco` registers the "coco" convention with `clinseg.rle` when imported, and each
# built-in competition (imported by `clinseg.submissions`) registers its own ("hw2", "dsb2018", ...).
from .runs import RLEError, mask_to_runs, runs_to_mask
from .objects import Objects
from .rle import CONVENTIONS, Convention, decode, encode, format_runs, parse_runs, rle_playground, transcode
from .coco import coco_string
from .dice import dice, iou
from .dice_sets import dice_explorer, dice_per_class, mean_dice, rle_dice
from .surface import assd, hausdorff, hd95, surface_dice, surface_explorer
from .instances import iou_matrix, overlap_counts
from .instance_labels import label_to_runs
from .predictions import image_truth
from .ap import average_precision
from .ap_plots import pr_explorer
from .coco_eval import coco_average_precision
from .phantom import ct_phantom
from .ct import read_dicom_series
from .nifti import align_label, read_nifti_label
from .dicom_seg import read_dicom_seg
from .viewer import ct_viewer, window
from .imageio import ImageError, read_image
from .competition import Competition, SubmissionError
from .folders import evaluate_folders
from .scoring import Table, dice_items, instance_items
from .uncertainty import bootstrap_interval
from .submissions import (get_competition, load_competition, plot_scores, read_solution, score, submission_checker,
                          validate, write_solution, write_submission)
from .competitions.dsb2018 import dsb_image_score, dsb_score, dsb_threshold_explorer
from .demo import run_demo
