// expect: PrintInLoop
public class SumCalculator {
    public static void main(String[] args) {
        int sum = 0;
        int i = 1;
        while (i <= 100) {
            sum += i;
            i++;
            {
                System.out.print(sum + " ");
            }
        }
    }
}
