"""MLflow "model from code" entry: MLflow runs this file to get the pyfunc, instead of unpickling a logged
object (flows/logged_model.py logs it)."""
from mlflow.models import set_model

from flows.logged_model import SluiceLanguageModel

set_model(SluiceLanguageModel())
