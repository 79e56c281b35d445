"""MLflow "model from code" entry: MLflow runs this file to get the pyfunc, instead of unpickling a logged
object (training/logged_model.py logs it)."""
from mlflow.models import set_model

from training.logged_model import SluiceLanguageModel

set_model(SluiceLanguageModel())
